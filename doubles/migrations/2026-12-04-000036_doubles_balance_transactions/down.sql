DROP INDEX simulated_refunds_listed;
DROP INDEX simulated_payment_intents_captured;
ALTER TABLE simulated_payment_intents DROP COLUMN captured_at;
