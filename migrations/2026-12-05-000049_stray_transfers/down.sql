DROP TRIGGER transfers_not_stray ON transfers;
DROP FUNCTION ridepay_transfer_not_stray();
DROP FUNCTION ridepay_transfer_id_lock(text);
DROP TABLE stray_transfers;
DROP FUNCTION ridepay_ledger_stray_changed();
ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_kind_check,
    ADD CONSTRAINT ledger_transactions_kind_check CHECK (kind IN ('opening', 'capture', 'fee',
        'fx', 'refund', 'refund_failed', 'release', 'reallocation', 'transfer',
        'transfer_reversal'));
