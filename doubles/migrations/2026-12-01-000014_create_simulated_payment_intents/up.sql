-- The gateway doubles' PaymentIntents (the simulated gateway and the fake
-- Stripe keep theirs here): an external system's records, written only by
-- the doubles, each call in its own transaction.
CREATE TABLE simulated_payment_intents (
    id TEXT PRIMARY KEY,
    client_secret TEXT NOT NULL UNIQUE,
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    amount_capturable_cents BIGINT NOT NULL DEFAULT 0 CHECK (amount_capturable_cents >= 0),
    amount_received_cents BIGINT NOT NULL DEFAULT 0 CHECK (amount_received_cents >= 0),
    currency TEXT NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    customer TEXT,
    payment_method TEXT NOT NULL,
    capture_method TEXT NOT NULL CHECK (capture_method IN ('manual', 'automatic')),
    return_url TEXT,
    status TEXT NOT NULL CHECK (status IN (
        'requires_payment_method', 'requires_action', 'processing',
        'requires_capture', 'succeeded', 'canceled'
    )),
    latest_charge TEXT,
    last_error_code TEXT,
    last_error_decline_code TEXT,
    last_error_message TEXT,
    cancellation_reason TEXT,
    -- Stripe allows at most ten increments of one authorization.
    increments INTEGER NOT NULL DEFAULT 0 CHECK (increments BETWEEN 0 AND 10),
    -- When a hold lapses (SIMULATED_GATEWAY_AUTHORIZATION_TTL_SECS).
    authorization_expires_at TIMESTAMPTZ,
    metadata JSONB NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Every PaymentIntent call a double answered, by the caller's idempotency
-- key, with what it answered: the same key and parameters get that answer
-- again (as Stripe replays, in the state it had then); other parameters, an
-- idempotency error.
CREATE TABLE simulated_intent_calls (
    idempotency_key TEXT PRIMARY KEY CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    operation TEXT NOT NULL,
    parameters JSONB NOT NULL,
    answer JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
