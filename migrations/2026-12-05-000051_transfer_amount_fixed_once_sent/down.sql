CREATE OR REPLACE FUNCTION ridepay_transfer_owes(owed transfers, amount bigint) RETURNS void
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
