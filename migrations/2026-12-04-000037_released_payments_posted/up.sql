-- A payment no ride records, refunded by reconciliation, is posted when
-- the release is recorded: its charge's capture, the gateway's fee on it
-- and the release's refund, against `platform:suspense` (movements no ride
-- explains). What the gateway said of them is kept with the release, so
-- that `ridepay ledger check` can tell each posting from its movement.
ALTER TABLE released_payments
    ADD COLUMN charge_id TEXT,
    ADD COLUMN captured_cents BIGINT CHECK (captured_cents > 0),
    ADD COLUMN balance_transaction_id TEXT,
    ADD COLUMN fee_cents BIGINT CHECK (fee_cents >= 0),
    ADD COLUMN refund_id TEXT,
    ADD CHECK ((charge_id IS NULL) = (captured_cents IS NULL)),
    ADD CHECK ((balance_transaction_id IS NULL) = (fee_cents IS NULL));

CREATE FUNCTION ridepay_ledger_release_recorded() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    gateway text := 'gateway:' || NEW.currency;
    suspense text := 'platform:suspense:' || NEW.currency;
BEGIN
    IF NEW.charge_id IS NOT NULL THEN
        PERFORM ridepay_ledger_post('capture', NEW.charge_id || ':capture', NULL, NULL,
            ARRAY[gateway, suspense], ARRAY[NEW.captured_cents, -NEW.captured_cents]);
    END IF;
    IF NEW.fee_cents > 0 THEN
        PERFORM ridepay_ledger_post('fee', NEW.balance_transaction_id || ':fee', NULL, NULL,
            ARRAY['platform:fees:' || NEW.currency, gateway], ARRAY[NEW.fee_cents, -NEW.fee_cents]);
    END IF;
    IF NEW.refund_id IS NOT NULL THEN
        PERFORM ridepay_ledger_post('refund', NEW.refund_id || ':refund', NULL, NULL,
            ARRAY[gateway, suspense], ARRAY[-NEW.amount_cents, NEW.amount_cents]);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER released_payments_post_to_ledger AFTER UPDATE ON released_payments
    FOR EACH ROW WHEN (OLD.released_at IS NULL AND NEW.released_at IS NOT NULL)
    EXECUTE FUNCTION ridepay_ledger_release_recorded();
