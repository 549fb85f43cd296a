DROP TABLE ledger_entries, ledger_transactions, ledger_accounts;
DROP FUNCTION ridepay_ledger_append_only(), ridepay_ledger_balanced(),
    ridepay_ledger_canonical(bigint);
ALTER TABLE installation DROP COLUMN ledger_started_at;
