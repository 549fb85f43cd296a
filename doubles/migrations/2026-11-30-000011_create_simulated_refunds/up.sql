-- The simulated gateway's refunds, beside its charges: written only by the
-- gateway, in its own transactions, idempotent on the caller's key like its
-- charges. A charge can never be refunded beyond its amount.
CREATE TABLE simulated_refunds (
    id TEXT PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    charge_id TEXT NOT NULL REFERENCES simulated_charges (id),
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    currency TEXT NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    reason TEXT,
    metadata JSONB NOT NULL DEFAULT '{}',
    status TEXT NOT NULL CHECK (status IN ('succeeded')),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX simulated_refunds_charge_id ON simulated_refunds (charge_id);

-- The gateway's record of a dispute opened by the card holder's bank.
ALTER TABLE simulated_charges ADD COLUMN disputed BOOLEAN NOT NULL DEFAULT false;
