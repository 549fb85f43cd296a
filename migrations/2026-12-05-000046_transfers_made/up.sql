-- Making the transfers ridepay owes its drivers: a worker claims each for
-- a while (`claimed_until`; `claim_epoch` fences its record against a
-- worker that claimed it after), sends it under a gateway key derived from
-- the ride, the source charge and `generation` (one more each time the
-- gateway proved nothing was made), and records what the gateway made,
-- which is posted to the ledger.

-- A function whose SQL body is parsed ahead holds the table's row type
-- still: it is made again below, in PL/pgSQL.
DROP FUNCTION ridepay_transfer_owes(transfers, bigint);

ALTER TABLE transfers
    ADD COLUMN generation SMALLINT NOT NULL DEFAULT 0,
    ADD COLUMN first_attempt_at TIMESTAMPTZ,
    ADD COLUMN claimed_until TIMESTAMPTZ,
    ADD COLUMN claim_epoch BIGINT NOT NULL DEFAULT 0;

-- A transfer not made yet, owing `amount` now; one being sent is not owed
-- less by a refund meanwhile (what the refund takes stays as the driver's
-- debt).
CREATE FUNCTION ridepay_transfer_owes(owed transfers, amount bigint) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    UPDATE transfers
    SET amount_cents = amount,
        status = CASE WHEN amount = 0 THEN 'netted'
                      WHEN status = 'netted' THEN 'pending' ELSE status END,
        updated_at = now()
    WHERE id = owed.id AND gateway_transfer_id IS NULL
      AND (claimed_until IS NULL OR claimed_until < now());
END
$$;

-- A transfer made: what ridepay owed the driver leaves the platform's
-- balance at the gateway.
CREATE FUNCTION ridepay_ledger_transfer_made() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ridepay_ledger_post('transfer', NEW.gateway_transfer_id || ':transfer', NEW.ride_id,
        NULL,
        ARRAY[(SELECT payable_code FROM drivers WHERE id = NEW.driver_id) || ':' || NEW.currency,
              'gateway:' || NEW.currency],
        ARRAY[NEW.amount_cents, -NEW.amount_cents]);
    RETURN NULL;
END
$$;
CREATE TRIGGER transfers_post_to_ledger AFTER UPDATE ON transfers
    FOR EACH ROW WHEN (OLD.gateway_transfer_id IS NULL AND NEW.gateway_transfer_id IS NOT NULL)
    EXECUTE FUNCTION ridepay_ledger_transfer_made();
