DROP TABLE simulated_charges;
