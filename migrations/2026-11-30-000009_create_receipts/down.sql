DROP INDEX staged_jobs_due;
CREATE INDEX staged_jobs_run_at ON staged_jobs (run_at);
DROP TABLE receipts;
