-- The refunds endpoint's own recovery points, beside the rides endpoint's.
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_recovery_point_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_recovery_point_check
    CHECK (recovery_point IN (
        'started', 'ride_created', 'charge_completed',
        'refund_created', 'refund_completed', 'finished'
    ));

-- Refunds of a ride's charge: made through POST /api/rides/{id}/refunds (with
-- an idempotency key), or outside ridepay and learnt from a Stripe webhook
-- (without one). A pending refund reserves its amount: the refunds endpoint
-- counts it against what remains, under the ride's row lock.
CREATE TABLE refunds (
    id BIGSERIAL PRIMARY KEY,
    ride_id BIGINT NOT NULL REFERENCES rides (id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- The final guard against a second refund for one key. Reaping the key
    -- keeps the refund.
    idempotency_key_id BIGINT UNIQUE REFERENCES idempotency_keys (id) ON DELETE SET NULL,
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    currency TEXT NOT NULL CHECK (currency IN ('usd', 'eur', 'gbp')),
    reason TEXT CHECK (reason IN ('requested_by_customer', 'duplicate', 'fraudulent')),
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
    -- The final guard against recording one gateway refund twice.
    gateway_refund_id TEXT UNIQUE
        CHECK (gateway_refund_id IS NULL OR char_length(gateway_refund_id) BETWEEN 1 AND 255),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT refunds_succeeded_has_gateway_refund_id CHECK (
        status <> 'succeeded' OR gateway_refund_id IS NOT NULL
    )
);

CREATE INDEX refunds_ride_id_id ON refunds (ride_id, id);
-- What remains to refund counts the pending refunds of a ride.
CREATE INDEX refunds_pending_ride_id ON refunds (ride_id) WHERE status = 'pending';
