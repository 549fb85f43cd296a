-- A charge the gateway settled in another currency than the ride's (its
-- balance transaction's `exchange_rate` set): what the balance took, in
-- the currency it took it in, recorded by reconciliation. Its capture is
-- posted in the ride's currency as any other; the conversion
-- (`<ch id>:fx`) moves it out of `gateway:<ride currency>` through the
-- `fx` accounts into `gateway:<settled currency>`, and the fee is posted
-- in the currency the gateway charged it in. `ridepay ledger check` lists
-- such charges under `needs_attention`.
ALTER TABLE charges
    ADD COLUMN settled_currency TEXT CHECK (settled_currency ~ '^[a-z]{3}$'),
    ADD COLUMN settled_cents BIGINT CHECK (settled_cents > 0),
    ADD CONSTRAINT charges_settled_with_amount
        CHECK ((settled_currency IS NULL) = (settled_cents IS NULL)),
    ADD CONSTRAINT charges_settled_from_balance_transaction
        CHECK (settled_currency IS NULL
               OR (balance_transaction_id IS NOT NULL AND settled_currency <> currency));

ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_kind_check,
    ADD CONSTRAINT ledger_transactions_kind_check CHECK (kind IN ('opening', 'capture', 'fee',
        'fx', 'refund', 'refund_failed', 'release', 'reallocation', 'transfer',
        'transfer_reversal'));

CREATE OR REPLACE FUNCTION ridepay_ledger_charge_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    gateway text := 'gateway:' || NEW.currency;
    settled text := coalesce(NEW.settled_currency, NEW.currency);
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM ridepay_ledger_post('capture', NEW.id || ':capture', NEW.ride_id, NULL,
            ARRAY[gateway, 'platform:unassigned:' || NEW.currency],
            ARRAY[NEW.amount_cents, -NEW.amount_cents]);
    END IF;
    IF NEW.settled_currency IS NOT NULL THEN
        -- A currency no ride is in has no accounts until its first
        -- conversion: made once, never updated, so no ride waits on them.
        INSERT INTO ledger_accounts (code, kind, currency)
        VALUES ('gateway:' || settled, 'asset', settled), ('fx:' || settled, 'fx', settled),
               ('platform:fees:' || settled, 'expense', settled)
        ON CONFLICT (code) DO NOTHING;
        PERFORM ridepay_ledger_post('fx', NEW.id || ':fx', NEW.ride_id, NULL,
            ARRAY['fx:' || NEW.currency, gateway,
                  'gateway:' || settled, 'fx:' || settled],
            ARRAY[NEW.amount_cents, -NEW.amount_cents, NEW.settled_cents, -NEW.settled_cents]);
    END IF;
    IF NEW.fee_cents > 0 THEN
        PERFORM ridepay_ledger_post('fee', NEW.balance_transaction_id || ':fee', NEW.ride_id, NULL,
            ARRAY['platform:fees:' || settled, 'gateway:' || settled],
            ARRAY[NEW.fee_cents, -NEW.fee_cents]);
    END IF;
    RETURN NULL;
END
$$;
