-- Users authenticate with a bearer API key; only its SHA-256 is stored.
CREATE TABLE users (
    id BIGSERIAL PRIMARY KEY,
    email TEXT NOT NULL
        CHECK (char_length(email) BETWEEN 3 AND 320 AND email LIKE '%_@_%'),
    api_key_hash BYTEA NOT NULL CHECK (octet_length(api_key_hash) = 32),
    -- A stored Stripe-style customer id, charged when a ride names no source.
    stripe_customer_id TEXT
        CHECK (stripe_customer_id IS NULL OR char_length(stripe_customer_id) BETWEEN 1 AND 255),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX users_email_lower_key ON users (lower(email));
CREATE UNIQUE INDEX users_api_key_hash_key ON users (api_key_hash);
