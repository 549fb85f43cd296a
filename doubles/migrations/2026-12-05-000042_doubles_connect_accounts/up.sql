-- Connected accounts (Stripe Connect, Express), as both doubles hold them.
CREATE TABLE simulated_accounts (
    id TEXT PRIMARY KEY,
    gateway TEXT NOT NULL CHECK (gateway IN ('simulated', 'fake')),
    email TEXT,
    country TEXT NOT NULL CHECK (country ~ '^[A-Z]{2}$'),
    -- The `transfers` capability, requested with the account.
    transfers TEXT NOT NULL DEFAULT 'inactive'
        CHECK (transfers IN ('active', 'inactive', 'pending')),
    details_submitted BOOLEAN NOT NULL DEFAULT false,
    metadata JSONB NOT NULL DEFAULT '{}',
    -- In whole seconds, as Stripe's `created`.
    created_at TIMESTAMPTZ NOT NULL DEFAULT date_trunc('second', now())
);
