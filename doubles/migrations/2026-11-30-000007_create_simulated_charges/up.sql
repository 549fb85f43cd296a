-- The simulated payment gateway's own records. It stands in for an external
-- system: written only by the gateway, in its own transactions.
CREATE TABLE simulated_charges (
    id TEXT PRIMARY KEY,
    -- Like Stripe, the gateway is idempotent on the key its caller derives.
    idempotency_key TEXT NOT NULL UNIQUE CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    currency TEXT NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    source TEXT NOT NULL,
    description TEXT,
    metadata JSONB NOT NULL DEFAULT '{}',
    status TEXT NOT NULL CHECK (status IN ('succeeded', 'failed')),
    failure_code TEXT,
    decline_code TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT simulated_charges_failed_has_code CHECK (
        (status = 'failed') = (failure_code IS NOT NULL)
    )
);
