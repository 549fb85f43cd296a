DROP TRIGGER released_payments_post_to_ledger ON released_payments;
DROP FUNCTION ridepay_ledger_release_recorded();
ALTER TABLE released_payments
    DROP COLUMN charge_id,
    DROP COLUMN captured_cents,
    DROP COLUMN balance_transaction_id,
    DROP COLUMN fee_cents,
    DROP COLUMN refund_id;
