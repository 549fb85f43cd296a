-- The canonical form's body names the tables: it goes first.
DROP FUNCTION ridepay_ledger_canonical(bigint);
DROP TABLE ledger_entries, ledger_transactions, ledger_accounts;
DROP FUNCTION ridepay_ledger_append_only(), ridepay_ledger_transaction_checked(),
    ridepay_ledger_entry_checked(), ridepay_ledger_check(bigint);
ALTER TABLE installation DROP COLUMN ledger_started_at;
