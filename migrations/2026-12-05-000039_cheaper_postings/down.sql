-- The functions compute what the earlier ones computed: they stay.
DROP INDEX ledger_transactions_reverses;
ALTER TABLE ledger_transactions ADD CONSTRAINT ledger_transactions_reverses_key UNIQUE (reverses);
DROP INDEX ledger_transactions_created_at;
CREATE INDEX ledger_transactions_created_at ON ledger_transactions (created_at);
