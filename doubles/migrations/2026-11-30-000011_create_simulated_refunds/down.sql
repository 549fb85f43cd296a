ALTER TABLE simulated_charges DROP COLUMN disputed;
DROP TABLE simulated_refunds;
