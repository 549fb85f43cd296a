DROP TRIGGER transfers_post_to_ledger ON transfers;
DROP FUNCTION ridepay_ledger_transfer_made();
DROP FUNCTION ridepay_transfer_owes(transfers, bigint);
ALTER TABLE transfers DROP COLUMN claim_epoch, DROP COLUMN claimed_until,
    DROP COLUMN first_attempt_at, DROP COLUMN generation;
CREATE FUNCTION ridepay_transfer_owes(owed transfers, amount bigint) RETURNS void
    LANGUAGE sql
    BEGIN ATOMIC
        UPDATE transfers
        SET amount_cents = amount,
            status = CASE WHEN amount = 0 THEN 'netted'
                          WHEN status = 'netted' THEN 'pending' ELSE status END,
            updated_at = now()
        WHERE id = owed.id;
    END;
