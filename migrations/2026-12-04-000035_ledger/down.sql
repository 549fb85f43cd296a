DROP TRIGGER refunds_post_new_to_ledger ON refunds;
DROP TRIGGER refunds_post_to_ledger ON refunds;
DROP TABLE charges;
DROP TABLE ledger_entries, ledger_transactions, ledger_accounts;
DROP FUNCTION ridepay_ledger_refund_changed(), ridepay_ledger_charge_changed(),
    ridepay_ledger_post(text, text, bigint, bigint, text[], bigint[]),
    ridepay_ledger_canonical(text[], bigint[]), ridepay_ledger_balanced(text, text[], bigint[]),
    ridepay_ledger_append_only(),
    ridepay_ledger_transaction_checked(), ridepay_ledger_entry_joins_new();
ALTER TABLE installation DROP COLUMN ledger_started_at;
