-- Unfinished keys of version 2 must be finished first: an older release
-- would resend their calls under version 1's keys.
CREATE INDEX idempotency_keys_finished_created_at
    ON idempotency_keys (created_at) WHERE recovery_point = 'finished';
DROP INDEX idempotency_keys_finished_updated_at;
DROP INDEX idempotency_keys_ridepay_key;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_ridepay_key_from_version_2;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_call_version_known;
ALTER TABLE idempotency_keys DROP COLUMN ridepay_key;
ALTER TABLE idempotency_keys DROP COLUMN call_version;
ALTER TABLE users DROP CONSTRAINT users_public_id_key;
ALTER TABLE users DROP COLUMN public_id;
