-- Reconciliation with the gateway (docs/RELIABILITY.md, "Reconciliation").

-- The generation of the key's gateway calls: a call whose answer was a
-- failure the gateway saved under its key is sent again, once lists proved
-- it made nothing, under the next generation's key. At most one generation
-- of a call is ever live: only reconciliation moves it on, fenced by the
-- lease, and only after proving the one before made nothing.
ALTER TABLE idempotency_keys ADD COLUMN call_generation smallint NOT NULL DEFAULT 0;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_call_generation_range
    CHECK (call_generation BETWEEN 0 AND 99);
-- Set when a call's answer was a saved failure: the key waits for
-- reconciliation (clients get 503s, the completer passes it by).
ALTER TABLE idempotency_keys ADD COLUMN outcome_unknown_at timestamptz;
CREATE INDEX idempotency_keys_outcome_unknown
    ON idempotency_keys (outcome_unknown_at) WHERE outcome_unknown_at IS NOT NULL;

-- One reconciliation pass at a time across instances: a lease row (a
-- session advisory lock would not survive a transaction pooler), and the
-- cursor of the orphan listing: every PaymentIntent created before
-- `listed_before` was matched or released by an earlier pass.
CREATE TABLE reconciliation (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    holder uuid,
    held_until timestamptz,
    listed_before timestamptz
);
INSERT INTO reconciliation DEFAULT VALUES;

-- A payment at the gateway that no ride records, released (a hold
-- cancelled, a capture refunded) under its own derived key. The tombstone is
-- written before the release: a request or completer run of its
-- `ridepay_key` afterwards ends with a stored 502 instead of recording it.
CREATE TABLE released_payments (
    ridepay_key text PRIMARY KEY CHECK (ridepay_key ~ '^[0-9a-f]{64}$'),
    payment_intent_id text NOT NULL UNIQUE,
    action text NOT NULL CHECK (action IN ('cancel', 'refund')),
    amount_cents bigint NOT NULL,
    currency text NOT NULL,
    -- Set once the gateway answered the release.
    released_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
