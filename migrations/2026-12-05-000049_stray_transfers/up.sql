-- Transfers the gateway made under this installation's metadata that no
-- transfers row records and none would (a send that crashed before it
-- recorded its answer and was sent again under another key, a duplicate):
-- reconciliation writes a tombstone for each before it reverses it, so that
-- no row records it afterwards, and keeps its reversal's outcome there.
-- Both are posted against `platform:suspense` (no ride explains them): the
-- transfer when it is found, its reversal when it is made.

ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_kind_check,
    ADD CONSTRAINT ledger_transactions_kind_check CHECK (kind IN ('opening', 'capture', 'fee',
        'fx', 'refund', 'refund_failed', 'release', 'reallocation', 'transfer',
        'transfer_reversal', 'stray_transfer', 'stray_reversal'));

CREATE TABLE stray_transfers (
    -- The gateway's `tr_` id.
    transfer_id TEXT PRIMARY KEY CHECK (char_length(transfer_id) BETWEEN 1 AND 255),
    -- The driver whose account it went to.
    driver_id BIGINT NOT NULL REFERENCES drivers (id),
    -- What it had left to reverse when it was found: posted then.
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    currency TEXT NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    -- The `ridepay_key` its metadata named.
    ridepay_key TEXT NOT NULL CHECK (char_length(ridepay_key) BETWEEN 1 AND 255),
    -- The gateway's `created`: where the listing that finds its reversal
    -- starts.
    transfer_created_at TIMESTAMPTZ NOT NULL,
    -- `pending`: the reversal not made yet, or its answer lost (sent again
    -- under the same key); `balance_insufficient`: refused because the
    -- driver's available balance was short (sent again on the next pass,
    -- under the next generation's key: the refusal proved nothing was made);
    -- `reversed`; `refused`: refused otherwise, for an operator.
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'balance_insufficient', 'reversed', 'refused')),
    generation SMALLINT NOT NULL DEFAULT 0 CHECK (generation >= 0),
    failure_reason TEXT CHECK (char_length(failure_reason) <= 500),
    -- The reversal's `trr_` id and what it took back, once made.
    reversal_id TEXT UNIQUE CHECK (char_length(reversal_id) BETWEEN 1 AND 255),
    reversed_cents BIGINT CHECK (reversed_cents > 0),
    found_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((status = 'reversed') = (reversal_id IS NOT NULL)),
    CHECK ((reversal_id IS NULL) = (reversed_cents IS NULL))
);
CREATE INDEX stray_transfers_driver ON stray_transfers (driver_id);

-- Whether the gateway transfer `transfer_id` is a stray or recorded by a
-- transfers row is decided under this transaction lock: reconciliation
-- holds it while it checks that no row records it or would and writes the
-- tombstone, a row's record of it takes it before it checks the tombstone.
CREATE FUNCTION ridepay_transfer_id_lock(transfer_id text) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(transfer_id, 11));
END
$$;

-- No transfers row records a transfer reconciliation found stray: it is
-- being reversed, and the row's transfer is made under its next key.
CREATE FUNCTION ridepay_transfer_not_stray() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.gateway_transfer_id IS NOT DISTINCT FROM NEW.gateway_transfer_id THEN
        RETURN NEW;
    END IF;
    PERFORM ridepay_transfer_id_lock(NEW.gateway_transfer_id);
    IF EXISTS (SELECT FROM stray_transfers AS stray
               WHERE stray.transfer_id = NEW.gateway_transfer_id) THEN
        RAISE EXCEPTION 'transfer % was found stray and is reversed: no transfer records it',
            NEW.gateway_transfer_id USING ERRCODE = '23514';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER transfers_not_stray BEFORE INSERT OR UPDATE OF gateway_transfer_id ON transfers
    FOR EACH ROW WHEN (NEW.gateway_transfer_id IS NOT NULL)
    EXECUTE FUNCTION ridepay_transfer_not_stray();

-- A stray posted when found (the money left the platform's balance for no
-- ride), and its reversal when made (it came back).
CREATE FUNCTION ridepay_ledger_stray_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    gateway text := 'gateway:' || NEW.currency;
    suspense text := 'platform:suspense:' || NEW.currency;
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM ridepay_ledger_post('stray_transfer', NEW.transfer_id || ':stray_transfer', NULL,
            NULL, ARRAY[suspense, gateway], ARRAY[NEW.amount_cents, -NEW.amount_cents]);
    ELSE
        PERFORM ridepay_ledger_post('stray_reversal', NEW.reversal_id || ':stray_reversal', NULL,
            NULL, ARRAY[gateway, suspense], ARRAY[NEW.reversed_cents, -NEW.reversed_cents]);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER stray_transfers_post_to_ledger AFTER INSERT ON stray_transfers
    FOR EACH ROW EXECUTE FUNCTION ridepay_ledger_stray_changed();
CREATE TRIGGER stray_transfers_post_reversal_to_ledger AFTER UPDATE ON stray_transfers
    FOR EACH ROW WHEN (OLD.reversal_id IS NULL AND NEW.reversal_id IS NOT NULL)
    EXECUTE FUNCTION ridepay_ledger_stray_changed();
