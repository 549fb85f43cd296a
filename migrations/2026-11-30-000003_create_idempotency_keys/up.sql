-- One row per (user, Idempotency-Key): the lease, the recovery point reached so
-- far, the canonical request (so a worker can finish it without the client) and,
-- once finished, the response replayed byte for byte.
CREATE TABLE idempotency_keys (
    id BIGSERIAL PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key TEXT NOT NULL CHECK (char_length(key) BETWEEN 1 AND 255),
    request_method TEXT NOT NULL CHECK (request_method IN ('POST', 'PUT', 'PATCH', 'DELETE')),
    request_path TEXT NOT NULL CHECK (char_length(request_path) BETWEEN 1 AND 2048),
    -- "v<version>:<hex sha-256>": the version says how it was computed.
    request_fingerprint TEXT NOT NULL CHECK (request_fingerprint ~ '^v[0-9]+:[0-9a-f]{64}$'),
    request_params JSONB NOT NULL,
    -- Fencing token: bumped by every lease taken; every phase commit checks it.
    lease_epoch BIGINT NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0),
    locked_at TIMESTAMPTZ,
    last_run_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    recovery_point TEXT NOT NULL DEFAULT 'started'
        CHECK (recovery_point IN ('started', 'ride_created', 'charge_completed', 'finished')),
    response_status SMALLINT CHECK (response_status BETWEEN 100 AND 599),
    -- An ordered array of [name, value] pairs.
    response_headers JSONB CHECK (jsonb_typeof(response_headers) = 'array'),
    -- Bytes, never jsonb: a replay must be byte-identical to the first answer.
    response_body BYTEA,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT idempotency_keys_user_id_key_key UNIQUE (user_id, key),
    -- "finished" holds exactly when a response is stored.
    CONSTRAINT idempotency_keys_finished_has_response CHECK (
        (recovery_point = 'finished') = (
            response_status IS NOT NULL
            AND response_headers IS NOT NULL
            AND response_body IS NOT NULL
        )
    ),
    CONSTRAINT idempotency_keys_finished_is_unlocked CHECK (
        recovery_point <> 'finished' OR locked_at IS NULL
    )
);

-- The reaper walks finished keys by age; workers look for unfinished ones.
CREATE INDEX idempotency_keys_finished_created_at
    ON idempotency_keys (created_at) WHERE recovery_point = 'finished';
CREATE INDEX idempotency_keys_unfinished_last_run_at
    ON idempotency_keys (last_run_at) WHERE recovery_point <> 'finished';
