DROP TABLE simulated_payouts;
DROP TABLE simulated_transfer_reversals;
DROP TABLE simulated_transfers;
