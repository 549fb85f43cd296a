-- Posting costs every ride: what each posting computes is computed
-- without planning a query, and the indexes every posting maintains are
-- the ones something reads.

-- The canonical form, built without a query: a transaction has a few
-- entries, put in their codes' order by insertion.
CREATE OR REPLACE FUNCTION ridepay_ledger_canonical(codes text[], amounts bigint[]) RETURNS text
    LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    in_order int[] := '{}';
    place int;
    canonical text;
BEGIN
    FOR i IN 1 .. coalesce(cardinality(codes), 0) LOOP
        place := cardinality(in_order);
        WHILE place > 0 AND codes[in_order[place]] COLLATE "C" > codes[i] COLLATE "C" LOOP
            place := place - 1;
        END LOOP;
        in_order := in_order[1:place] || i || in_order[place + 1:];
    END LOOP;
    FOREACH place IN ARRAY in_order LOOP
        canonical := coalesce(canonical || E'\n', '') || codes[place] || ' ' || amounts[place];
    END LOOP;
    RETURN coalesce(canonical, '');
END
$$;

-- Entries in one currency (every template but fx's) are summed in a loop.
CREATE OR REPLACE FUNCTION ridepay_ledger_balanced(source text, codes text[], amounts bigint[])
    RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    total bigint := 0;
    balanced boolean;
BEGIN
    IF coalesce(cardinality(codes), 0) = 0 THEN
        RAISE EXCEPTION 'ledger transaction % has no entries', source USING ERRCODE = '23514';
    END IF;
    FOR i IN 1 .. cardinality(codes) LOOP
        IF right(codes[i], 3) <> right(codes[1], 3) THEN
            balanced := NOT EXISTS (SELECT FROM unnest(codes, amounts) AS entry (code, amount)
                                    GROUP BY right(entry.code, 3) HAVING sum(entry.amount) <> 0);
            EXIT;
        END IF;
        total := total + amounts[i];
    END LOOP;
    IF NOT coalesce(balanced, total = 0) THEN
        RAISE EXCEPTION 'ledger transaction % does not balance', source USING ERRCODE = '23514';
    END IF;
END
$$;

-- Read by time ranges only (`ledger check --since`), in insertion order.
DROP INDEX ledger_transactions_created_at;
CREATE INDEX ledger_transactions_created_at ON ledger_transactions USING brin (created_at);

-- Few transactions reverse another.
ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_reverses_key;
CREATE UNIQUE INDEX ledger_transactions_reverses ON ledger_transactions (reverses)
    WHERE reverses IS NOT NULL;
