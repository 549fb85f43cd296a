DROP INDEX ledger_transactions_reverses;
ALTER TABLE ledger_transactions ADD CONSTRAINT ledger_transactions_reverses_key UNIQUE (reverses);
DROP INDEX ledger_transactions_created_at;
CREATE INDEX ledger_transactions_created_at ON ledger_transactions (created_at);

CREATE OR REPLACE FUNCTION ridepay_ledger_balanced(source text, codes text[], amounts bigint[]) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(cardinality(codes), 0) = 0 THEN
        RAISE EXCEPTION 'ledger transaction % has no entries', source USING ERRCODE = '23514';
    ELSIF EXISTS (SELECT 1 FROM unnest(codes, amounts) AS entry (code, amount)
                  GROUP BY right(entry.code, 3) HAVING sum(entry.amount) <> 0) THEN
        RAISE EXCEPTION 'ledger transaction % does not balance', source USING ERRCODE = '23514';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION ridepay_ledger_canonical(codes text[], amounts bigint[]) RETURNS text
    LANGUAGE sql IMMUTABLE
    RETURN (SELECT coalesce(string_agg(entry.code || ' ' || entry.amount, E'\n'
                                       ORDER BY entry.code COLLATE "C"), '')
            FROM unnest(codes, amounts) AS entry (code, amount));
