-- Drivers: the platform's payees, each a connected account at the gateway
-- (Stripe Connect, Express) that transfers pay once its `transfers`
-- capability is active. Made by POST /api/drivers; onboarded through pages
-- that carry a token, never the driver's id.
INSERT INTO idempotent_endpoints (name) VALUES ('drivers.create'), ('drivers.onboarding_link');
INSERT INTO recovery_points (endpoint, point) VALUES
    ('drivers.create', 'started'),
    ('drivers.create', 'account_requested'),
    ('drivers.create', 'finished'),
    ('drivers.onboarding_link', 'started'),
    ('drivers.onboarding_link', 'finished');

CREATE TABLE drivers (
    id BIGSERIAL PRIMARY KEY,
    public_id BYTEA NOT NULL CHECK (octet_length(public_id) = 18),
    idempotency_key_id BIGINT UNIQUE REFERENCES idempotency_keys (id) ON DELETE SET NULL,
    email TEXT NOT NULL CHECK (char_length(email) BETWEEN 3 AND 254),
    country TEXT NOT NULL CHECK (country ~ '^[A-Z]{2}$'),
    account_id TEXT NOT NULL UNIQUE CHECK (char_length(account_id) BETWEEN 1 AND 255),
    -- What ridepay owes the driver is in the ledger accounts
    -- `<payable_code>:<currency>`: `driver:drv_...:payable:usd`.
    payable_code TEXT NOT NULL UNIQUE CHECK (payable_code ~ '^driver:drv_[a-z2-7]{29}:payable$'),
    -- `onboarding` until the account's `transfers` capability is active,
    -- then `active`; `restricted` when it stops being active.
    status TEXT NOT NULL DEFAULT 'onboarding'
        CHECK (status IN ('onboarding', 'active', 'restricted')),
    -- When the gateway last told us the account's state.
    status_checked_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- SHA-256 of the onboarding pages' token (128 random bits), which only
    -- the answer that made it shows; good until the next one or its expiry.
    onboarding_token_hash BYTEA NOT NULL CHECK (octet_length(onboarding_token_hash) = 32),
    onboarding_token_expires_at TIMESTAMPTZ NOT NULL,
    -- When the pages last made an account link: at most one a minute.
    onboarding_link_made_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX drivers_public_id ON drivers (public_id);
CREATE UNIQUE INDEX drivers_onboarding_token ON drivers (onboarding_token_hash);
