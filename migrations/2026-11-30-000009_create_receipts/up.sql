-- Receipts delivered locally, when no RECEIPT_WEBHOOK_URL is set. Unique per
-- ride: the drainer delivers at least once, the receipt exists exactly once.
CREATE TABLE receipts (
    id BIGSERIAL PRIMARY KEY,
    ride_id BIGINT NOT NULL UNIQUE REFERENCES rides (id) ON DELETE CASCADE,
    staged_job_id BIGINT NOT NULL,
    payload JSONB NOT NULL,
    deliveries INTEGER NOT NULL DEFAULT 1 CHECK (deliveries >= 1),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Jobs are deleted once delivered; this index serves the drainer's claim.
DROP INDEX staged_jobs_run_at;
CREATE INDEX staged_jobs_due ON staged_jobs (run_at, id);
