-- The ledger (docs/API.md "The ledger"): double-entry, in minor units,
-- debits positive. Each transaction names the movement it records
-- (`source`, unique: a movement reported twice is posted once) and
-- carries the SHA-256 of its entries; per currency its entries sum to
-- zero, checked at commit. Nothing in it is ever updated, deleted or
-- truncated: a correction is a transaction that reverses.

ALTER TABLE installation ADD COLUMN ledger_started_at TIMESTAMPTZ NOT NULL DEFAULT now();

CREATE TABLE ledger_accounts (
    id BIGSERIAL PRIMARY KEY,
    -- `gateway:usd`, `platform:unassigned:usd`, `driver:<id>:payable:usd`.
    code TEXT NOT NULL UNIQUE CHECK (code ~ '^[a-z0-9_]+(:[a-z0-9_]+)*$'),
    kind TEXT NOT NULL
        CHECK (kind IN ('asset', 'liability', 'revenue', 'expense', 'suspense', 'fx')),
    currency TEXT NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (code LIKE '%:' || currency)
);

-- The installation's own accounts, made here for every ride currency: a
-- posting finds them, never makes or updates them, so no ride waits on
-- another's lock (their balances are sums of entries).
INSERT INTO ledger_accounts (code, kind, currency)
SELECT account.code || ':' || currency.code, account.kind, currency.code
FROM (VALUES ('gateway', 'asset'), ('platform:unassigned', 'liability'),
             ('platform:commission', 'revenue'), ('platform:fees', 'expense'),
             ('platform:suspense', 'suspense'), ('fx', 'fx')) AS account (code, kind),
     (VALUES ('usd'), ('eur'), ('gbp')) AS currency (code);

CREATE TABLE ledger_transactions (
    id BIGSERIAL PRIMARY KEY,
    -- `ltx_...`: made by no request, so random.
    public_id BYTEA NOT NULL UNIQUE DEFAULT ridepay_random_id()
        CHECK (octet_length(public_id) = 18),
    kind TEXT NOT NULL CHECK (kind IN ('opening', 'capture', 'fee', 'refund',
        'refund_failed', 'release', 'reallocation', 'transfer', 'transfer_reversal')),
    -- The movement: `<ch id>:capture`, `<txn id>:fee`, `<re id>:failed`, ...
    source TEXT NOT NULL UNIQUE CHECK (char_length(source) BETWEEN 1 AND 300),
    ride_id BIGINT REFERENCES rides (id),
    reverses BIGINT UNIQUE REFERENCES ledger_transactions (id),
    -- SHA-256 of `ridepay_ledger_canonical(id)`.
    entries_hash BYTEA NOT NULL CHECK (octet_length(entries_hash) = 32),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX ledger_transactions_ride ON ledger_transactions (ride_id)
    WHERE ride_id IS NOT NULL;
CREATE INDEX ledger_transactions_created_at ON ledger_transactions (created_at);

CREATE TABLE ledger_entries (
    transaction_id BIGINT NOT NULL REFERENCES ledger_transactions (id),
    account_id BIGINT NOT NULL REFERENCES ledger_accounts (id),
    amount_cents BIGINT NOT NULL CHECK (amount_cents <> 0),
    PRIMARY KEY (transaction_id, account_id)
);
-- An account's balance: a sum read through this index.
CREATE INDEX ledger_entries_account ON ledger_entries (account_id) INCLUDE (amount_cents);

-- A transaction's entries as its hash covers them: one line per entry,
-- `<account code> <amount>`, in the order of the codes.
CREATE FUNCTION ridepay_ledger_canonical(transaction_id bigint) RETURNS text
    LANGUAGE sql STABLE
    RETURN (SELECT coalesce(string_agg(account.code || ' ' || entry.amount_cents, E'\n'
                                       ORDER BY account.code COLLATE "C"), '')
            FROM ledger_entries AS entry
            JOIN ledger_accounts AS account ON account.id = entry.account_id
            WHERE entry.transaction_id = ridepay_ledger_canonical.transaction_id);

-- At commit: the transaction has entries, they balance in each currency,
-- and its hash is theirs.
CREATE FUNCTION ridepay_ledger_check(checked bigint) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM ledger_entries WHERE transaction_id = checked) THEN
        RAISE EXCEPTION 'ledger transaction % has no entries', checked
            USING ERRCODE = '23514';
    END IF;
    IF EXISTS (SELECT 1 FROM ledger_entries AS entry
               JOIN ledger_accounts AS account ON account.id = entry.account_id
               WHERE entry.transaction_id = checked
               GROUP BY account.currency HAVING sum(entry.amount_cents) <> 0) THEN
        RAISE EXCEPTION 'ledger transaction % does not balance', checked
            USING ERRCODE = '23514';
    END IF;
    IF (SELECT entries_hash FROM ledger_transactions WHERE id = checked)
       <> sha256(convert_to(ridepay_ledger_canonical(checked), 'UTF8')) THEN
        RAISE EXCEPTION 'the hash of ledger transaction % is not that of its entries', checked
            USING ERRCODE = '23514';
    END IF;
END
$$;
CREATE FUNCTION ridepay_ledger_transaction_checked() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ridepay_ledger_check(NEW.id);
    RETURN NULL;
END
$$;
CREATE FUNCTION ridepay_ledger_entry_checked() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ridepay_ledger_check(NEW.transaction_id);
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER ledger_transactions_balanced AFTER INSERT ON ledger_transactions
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    EXECUTE FUNCTION ridepay_ledger_transaction_checked();
CREATE CONSTRAINT TRIGGER ledger_entries_balanced AFTER INSERT ON ledger_entries
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ridepay_ledger_entry_checked();

CREATE FUNCTION ridepay_ledger_append_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% on % refused: the ledger is append-only; post a transaction that reverses',
        TG_OP, TG_TABLE_NAME USING ERRCODE = '42501';
END
$$;
CREATE TRIGGER ledger_accounts_append_only BEFORE UPDATE OR DELETE ON ledger_accounts
    FOR EACH ROW EXECUTE FUNCTION ridepay_ledger_append_only();
CREATE TRIGGER ledger_accounts_no_truncate BEFORE TRUNCATE ON ledger_accounts
    FOR EACH STATEMENT EXECUTE FUNCTION ridepay_ledger_append_only();
CREATE TRIGGER ledger_transactions_append_only BEFORE UPDATE OR DELETE ON ledger_transactions
    FOR EACH ROW EXECUTE FUNCTION ridepay_ledger_append_only();
CREATE TRIGGER ledger_transactions_no_truncate BEFORE TRUNCATE ON ledger_transactions
    FOR EACH STATEMENT EXECUTE FUNCTION ridepay_ledger_append_only();
CREATE TRIGGER ledger_entries_append_only BEFORE UPDATE OR DELETE ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ridepay_ledger_append_only();
CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries
    FOR EACH STATEMENT EXECUTE FUNCTION ridepay_ledger_append_only();

-- What the rides hold when the ledger starts, as opening transactions: a
-- ride's captured amount into the gateway, owed to no driver yet, and what
-- was refunded of it back out. No fees: the fee and gateway invariants
-- count from `ledger_started_at`.
WITH opened AS (
    SELECT ride.id AS ride_id, ride.currency, movement.what,
           CASE movement.what WHEN 'captured' THEN movement.amount ELSE -movement.amount END
               AS into_gateway
    FROM rides AS ride,
         LATERAL (VALUES ('captured', ride.amount_captured_cents),
                         ('refunded', ride.amount_refunded_cents)) AS movement (what, amount)
    WHERE movement.amount > 0
), transactions AS (
    INSERT INTO ledger_transactions (kind, source, ride_id, entries_hash)
    SELECT 'opening', 'opening:ride:' || ride_id || ':' || what, ride_id,
           sha256(convert_to('gateway:' || currency || ' ' || into_gateway || E'\n'
                             || 'platform:unassigned:' || currency || ' ' || -into_gateway,
                             'UTF8'))
    FROM opened
    RETURNING id, source
)
INSERT INTO ledger_entries (transaction_id, account_id, amount_cents)
SELECT transactions.id, account.id, entry.amount
FROM opened
JOIN transactions ON transactions.source = 'opening:ride:' || opened.ride_id || ':' || opened.what
CROSS JOIN LATERAL (VALUES ('gateway:' || opened.currency, opened.into_gateway),
                           ('platform:unassigned:' || opened.currency, -opened.into_gateway))
    AS entry (code, amount)
JOIN ledger_accounts AS account ON account.code = entry.code;
