DROP TABLE simulated_accounts;
