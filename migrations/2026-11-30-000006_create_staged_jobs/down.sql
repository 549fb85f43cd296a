DROP TABLE staged_jobs;
