-- What the completer needs to drive abandoned keys without a client: how often
-- it tried, when it may try again, and whether it gave up and an operator must
-- look at the key.
ALTER TABLE idempotency_keys
    ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    ADD COLUMN next_attempt_at TIMESTAMPTZ,
    ADD COLUMN needs_attention_at TIMESTAMPTZ,
    ADD COLUMN last_error TEXT;

-- The completer's candidates: unfinished keys it has not given up on.
DROP INDEX idempotency_keys_unfinished_last_run_at;
CREATE INDEX idempotency_keys_completer_candidates
    ON idempotency_keys (last_run_at)
    WHERE recovery_point <> 'finished' AND needs_attention_at IS NULL;
