DROP INDEX idempotency_keys_completer_candidates;
CREATE INDEX idempotency_keys_unfinished_last_run_at
    ON idempotency_keys (last_run_at) WHERE recovery_point <> 'finished';
ALTER TABLE idempotency_keys
    DROP COLUMN attempts,
    DROP COLUMN next_attempt_at,
    DROP COLUMN needs_attention_at,
    DROP COLUMN last_error;
