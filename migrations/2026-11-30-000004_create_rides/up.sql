CREATE TABLE rides (
    id BIGSERIAL PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- The final guard against a second ride for one key. Reaping the key keeps
    -- the ride.
    idempotency_key_id BIGINT UNIQUE REFERENCES idempotency_keys (id) ON DELETE SET NULL,
    origin_lat DOUBLE PRECISION NOT NULL CHECK (origin_lat BETWEEN -90 AND 90),
    origin_lon DOUBLE PRECISION NOT NULL CHECK (origin_lon BETWEEN -180 AND 180),
    target_lat DOUBLE PRECISION NOT NULL CHECK (target_lat BETWEEN -90 AND 90),
    target_lon DOUBLE PRECISION NOT NULL CHECK (target_lon BETWEEN -180 AND 180),
    -- Money is integer minor units.
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    amount_refunded_cents BIGINT NOT NULL DEFAULT 0
        CHECK (amount_refunded_cents BETWEEN 0 AND amount_cents),
    currency TEXT NOT NULL CHECK (currency IN ('usd', 'eur', 'gbp')),
    -- The source charged: the request's, or the user's stored customer id.
    payment_source TEXT NOT NULL CHECK (char_length(payment_source) BETWEEN 1 AND 255),
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN (
        'pending', 'charged', 'payment_declined', 'payment_failed', 'refunded', 'disputed'
    )),
    -- The final guard against recording one gateway charge twice.
    charge_id TEXT UNIQUE CHECK (charge_id IS NULL OR char_length(charge_id) BETWEEN 1 AND 255),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT rides_charged_has_charge_id CHECK (
        status NOT IN ('charged', 'refunded', 'disputed') OR charge_id IS NOT NULL
    )
);

-- Newest-first listing per user.
CREATE INDEX rides_user_id_id ON rides (user_id, id DESC);
