-- Baseline: one INSERT per transaction into a table with a unique index.
-- Random keys: a collision among 2^63 values is not expected in a run.
\set k random(1, 9223372036854775806)
INSERT INTO bench_insert (k) VALUES (:k);
