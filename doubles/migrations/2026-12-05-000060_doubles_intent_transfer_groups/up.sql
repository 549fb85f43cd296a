-- A PaymentIntent's `transfer_group`, which its charge's transfers take;
-- and its charge found by id, as a transfer's `source_transaction` names it.
ALTER TABLE simulated_payment_intents ADD COLUMN transfer_group TEXT;
CREATE INDEX simulated_payment_intents_charge ON simulated_payment_intents (latest_charge);
