CREATE OR REPLACE FUNCTION ridepay_ledger_charge_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    gateway text := 'gateway:' || NEW.currency;
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM ridepay_ledger_post('capture', NEW.id || ':capture', NEW.ride_id, NULL,
            ARRAY[gateway, 'platform:unassigned:' || NEW.currency],
            ARRAY[NEW.amount_cents, -NEW.amount_cents]);
    END IF;
    IF NEW.fee_cents > 0 THEN
        PERFORM ridepay_ledger_post('fee', NEW.balance_transaction_id || ':fee', NEW.ride_id, NULL,
            ARRAY['platform:fees:' || NEW.currency, gateway], ARRAY[NEW.fee_cents, -NEW.fee_cents]);
    END IF;
    RETURN NULL;
END
$$;

ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_kind_check,
    ADD CONSTRAINT ledger_transactions_kind_check CHECK (kind IN ('opening', 'capture', 'fee',
        'refund', 'refund_failed', 'release', 'reallocation', 'transfer', 'transfer_reversal'));

ALTER TABLE charges DROP COLUMN settled_currency, DROP COLUMN settled_cents;
