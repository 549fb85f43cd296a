-- Tips: POST /api/rides/{id}/tip, an idempotent endpoint with recovery
-- points of its own. On a held ride the tip waits for the completion, which
-- captures it with the fare; on a captured ride it is a PaymentIntent of
-- its own, made off session on the rider's saved card.
INSERT INTO idempotent_endpoints (name) VALUES ('rides.tip');
INSERT INTO recovery_points (endpoint, point) VALUES
    ('rides.tip', 'started'),
    ('rides.tip', 'tip_started'),
    ('rides.tip', 'finished'),
    ('refunds.create', 'fare_part_refunded');

-- One tip per ride that succeeded: `tip_cents` is 0 until one does. A tip
-- with a PaymentIntent of its own counts in `amount_captured_cents`.
ALTER TABLE rides ADD COLUMN tip_cents BIGINT NOT NULL DEFAULT 0
    CHECK (tip_cents BETWEEN 0 AND 100000);
ALTER TABLE rides ADD COLUMN tip_payment_intent_id TEXT UNIQUE
    CHECK (tip_payment_intent_id IS NULL OR char_length(tip_payment_intent_id) BETWEEN 1 AND 255);
ALTER TABLE rides ADD CONSTRAINT rides_tip_intent_has_tip
    CHECK (tip_payment_intent_id IS NULL OR tip_cents > 0);

-- A refund larger than what remains of the fare is split: its first part
-- refunds the fare's PaymentIntent, a second part (a row of its own, with
-- `part_of`) the tip's. `payment_intent_id` names the part's payment when it
-- is not the ride's own (the tip's); NULL is the ride's payment.
ALTER TABLE refunds ADD COLUMN part_of BIGINT REFERENCES refunds (id) ON DELETE CASCADE;
ALTER TABLE refunds ADD COLUMN payment_intent_id TEXT
    CHECK (payment_intent_id IS NULL OR char_length(payment_intent_id) BETWEEN 1 AND 255);
CREATE UNIQUE INDEX refunds_one_part_each ON refunds (part_of) WHERE part_of IS NOT NULL;
