-- The one-INSERT baseline's table: a key column with a unique index, as
-- idempotency keys have.
CREATE TABLE IF NOT EXISTS bench_insert (
    id BIGSERIAL PRIMARY KEY,
    k BIGINT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS bench_insert_k ON bench_insert (k);
