-- Gateway keys derived from what the client sent, not from row ids: a key
-- row lost at an asynchronous failover is made again by the client's retry,
-- with a new id but the same gateway key, so the gateway answers with the
-- payment it already made.

-- A random id per user, for the derivation: a user's row id is assigned by
-- the database and would come out differently after a lost commit.
ALTER TABLE users ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid();
ALTER TABLE users ADD CONSTRAINT users_public_id_key UNIQUE (public_id);

-- How the key's gateway calls are made: 1 derives their keys from the row
-- id and names rides and rows in their metadata (keys made before this
-- migration, which are resent exactly so); 2 derives them from
-- `ridepay_key`. The default is 1, so a release that predates the column,
-- running beside a newer one during a rolling deploy, writes what it does.
ALTER TABLE idempotency_keys ADD COLUMN call_version smallint NOT NULL DEFAULT 1;
-- Version 2's hash of the installation, the user's public id, the client's
-- key and the request's fingerprint (hex): the gateway's metadata names it,
-- and events and reconciliation find the key by it.
ALTER TABLE idempotency_keys ADD COLUMN ridepay_key text;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_call_version_known
    CHECK (call_version >= 1);
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_ridepay_key_from_version_2
    CHECK (call_version = 1 OR ridepay_key ~ '^[0-9a-f]{64}$');
CREATE UNIQUE INDEX idempotency_keys_ridepay_key ON idempotency_keys (ridepay_key);

-- A key reused after the reaper deleted its row derives the gateway keys
-- of the request before it, so the retention counts from when the key
-- finished (after its last gateway call, which may come up to the
-- completer's deadline after the key was created), not from its creation.
CREATE INDEX idempotency_keys_finished_updated_at
    ON idempotency_keys (updated_at) WHERE recovery_point = 'finished';
DROP INDEX idempotency_keys_finished_created_at;
