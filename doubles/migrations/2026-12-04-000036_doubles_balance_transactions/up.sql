-- When a charge was captured: when its balance transaction was made, by
-- which the balance's list is ordered and bounded (`created[gte]`). A charge
-- captured before the column is taken as captured when its intent last
-- changed.
ALTER TABLE simulated_payment_intents ADD COLUMN captured_at TIMESTAMPTZ;
UPDATE simulated_payment_intents SET captured_at = updated_at
    WHERE status = 'succeeded' AND amount_received_cents > 0;

-- The balance's list, newest first: captured charges and refunds.
CREATE INDEX simulated_payment_intents_captured
    ON simulated_payment_intents (gateway, captured_at DESC, latest_charge DESC)
    WHERE captured_at IS NOT NULL;
CREATE INDEX simulated_refunds_listed ON simulated_refunds (gateway, created_at DESC, id DESC);
