-- The transactional outbox: jobs staged in the same transaction as the state
-- change they announce, delivered at least once by a drainer.
CREATE TABLE staged_jobs (
    id BIGSERIAL PRIMARY KEY,
    job_type TEXT NOT NULL CHECK (job_type IN ('ride_receipt')),
    payload JSONB NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    run_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- A short lease column, so no row lock is held across a delivery.
    locked_until TIMESTAMPTZ,
    last_error TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX staged_jobs_run_at ON staged_jobs (run_at);
