-- Transfers to connected accounts, their reversals, and the payouts that
-- empty an account's available balance: what the doubles' connected
-- account balances are made of.
CREATE TABLE simulated_transfers (
    id TEXT PRIMARY KEY,
    gateway TEXT NOT NULL CHECK (gateway IN ('simulated', 'fake')),
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    currency TEXT NOT NULL,
    destination TEXT NOT NULL REFERENCES simulated_accounts (id),
    source_transaction TEXT NOT NULL,
    transfer_group TEXT,
    metadata JSONB NOT NULL DEFAULT '{}',
    -- To the microsecond, by which lists are ordered; `created` is its
    -- whole second.
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- When its funds become available in the destination's balance.
    available_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX simulated_transfers_listed
    ON simulated_transfers (gateway, created_at DESC, id DESC);
CREATE INDEX simulated_transfers_destination
    ON simulated_transfers (destination, created_at DESC, id DESC);
CREATE INDEX simulated_transfers_source ON simulated_transfers (source_transaction);

CREATE TABLE simulated_transfer_reversals (
    id TEXT PRIMARY KEY,
    transfer TEXT NOT NULL REFERENCES simulated_transfers (id),
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    metadata JSONB NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX simulated_transfer_reversals_transfer ON simulated_transfer_reversals (transfer);

-- What an automatic payout took from an account's available balance.
CREATE TABLE simulated_payouts (
    id TEXT PRIMARY KEY,
    account TEXT NOT NULL REFERENCES simulated_accounts (id),
    currency TEXT NOT NULL,
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX simulated_payouts_account ON simulated_payouts (account);
