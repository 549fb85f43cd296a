-- The gateway's fees on charges captured before the ledger started (their
-- captures are in the opening transactions), read back from the charges'
-- balance transactions by `ridepay ledger backfill-fees`: each row posts
-- its fee once, and is what `ridepay ledger check` explains that fee by.
CREATE TABLE opening_fees (
    balance_transaction_id TEXT PRIMARY KEY CHECK (char_length(balance_transaction_id) BETWEEN 1 AND 255),
    charge_id TEXT NOT NULL UNIQUE,
    ride_id BIGINT NOT NULL REFERENCES rides (id),
    fee_cents BIGINT NOT NULL CHECK (fee_cents > 0),
    currency TEXT NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX opening_fees_ride ON opening_fees (ride_id);

CREATE FUNCTION ridepay_ledger_opening_fee_recorded() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ridepay_ledger_post('fee', NEW.balance_transaction_id || ':fee', NEW.ride_id, NULL,
        ARRAY['platform:fees:' || NEW.currency, 'gateway:' || NEW.currency],
        ARRAY[NEW.fee_cents, -NEW.fee_cents]);
    RETURN NULL;
END
$$;
CREATE TRIGGER opening_fees_post_to_ledger AFTER INSERT ON opening_fees
    FOR EACH ROW EXECUTE FUNCTION ridepay_ledger_opening_fee_recorded();
CREATE TRIGGER opening_fees_append_only BEFORE UPDATE OR DELETE ON opening_fees
    FOR EACH ROW EXECUTE FUNCTION ridepay_ledger_append_only();
