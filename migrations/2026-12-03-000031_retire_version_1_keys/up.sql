-- Fingerprint version 1 (requests from before PaymentIntents) and call
-- version 1 (gateway keys from row ids) are retired: this release neither
-- matches a version 1 fingerprint (a retry of such a key would be refused as
-- another request, not replayed) nor resends a version 1 call. They could
-- only still fire for keys of the release before them that were neither
-- finished nor reaped; so the upgrade waits until there are none.
DO $$
DECLARE
    fingerprinted bigint;
    in_flight bigint;
BEGIN
    SELECT count(*) INTO fingerprinted FROM idempotency_keys
        WHERE request_fingerprint LIKE 'v1:%';
    SELECT count(*) INTO in_flight FROM idempotency_keys
        WHERE call_version = 1 AND recovery_point <> 'finished';
    IF fingerprinted > 0 OR in_flight > 0 THEN
        RAISE EXCEPTION
            'ridepay cannot retire version 1 keys yet: % keys have a version 1 fingerprint '
            'and % unfinished keys make version 1 calls', fingerprinted, in_flight
            USING HINT = 'Keep the release you run now until they are gone: its completer '
                'finishes unfinished keys (settle those `ridepay keys stuck` lists by hand) '
                'and its reaper deletes finished ones after IDEMPOTENCY_RETENTION_HOURS. '
                'See them with: SELECT id, user_id, key, recovery_point FROM idempotency_keys '
                'WHERE request_fingerprint LIKE ''v1:%'' OR (call_version = 1 AND '
                'recovery_point <> ''finished''); then run this release again.';
    END IF;
END $$;

-- No release that writes version 1 fingerprints can run beside this one.
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_fingerprint_of_version_2
    CHECK (request_fingerprint NOT LIKE 'v1:%');