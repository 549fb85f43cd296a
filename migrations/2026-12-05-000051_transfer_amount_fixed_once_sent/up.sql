-- A transfer's amount is fixed once it has been sent: a refund of its
-- charge after the first attempt (whose answer may have been lost, the
-- transfer made) leaves what it takes as the driver's debt, instead of
-- lowering an amount the gateway holds under the transfer's key, which
-- would refuse the same key with another amount.
CREATE OR REPLACE FUNCTION ridepay_transfer_owes(owed transfers, amount bigint) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    UPDATE transfers
    SET amount_cents = amount,
        status = CASE WHEN amount = 0 THEN 'netted'
                      WHEN status = 'netted' THEN 'pending' ELSE status END,
        updated_at = now()
    WHERE id = owed.id AND gateway_transfer_id IS NULL AND first_attempt_at IS NULL;
END
$$;
