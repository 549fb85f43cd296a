DROP TABLE released_payments;
DROP TABLE reconciliation;
DROP INDEX idempotency_keys_outcome_unknown;
ALTER TABLE idempotency_keys DROP COLUMN outcome_unknown_at;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_call_generation_range;
ALTER TABLE idempotency_keys DROP COLUMN call_generation;
