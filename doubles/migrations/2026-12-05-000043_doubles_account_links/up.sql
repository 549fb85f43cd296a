-- Onboarding links, as Stripe makes them: good for one visit and a few
-- minutes.
CREATE TABLE simulated_account_links (
    id TEXT PRIMARY KEY,
    account TEXT NOT NULL REFERENCES simulated_accounts (id),
    refresh_url TEXT NOT NULL,
    return_url TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at TIMESTAMPTZ
);
