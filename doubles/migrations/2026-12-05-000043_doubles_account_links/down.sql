DROP TABLE simulated_account_links;
