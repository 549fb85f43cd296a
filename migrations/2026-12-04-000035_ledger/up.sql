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
    -- Ordered byte by byte, as the hash orders them, whatever the locale.
    code TEXT COLLATE "C" NOT NULL UNIQUE CHECK (code ~ '^[a-z0-9_]+(:[a-z0-9_]+)*$'),
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
    -- SHA-256 of its entries' canonical form (`ridepay_ledger_canonical`).
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
CREATE FUNCTION ridepay_ledger_canonical(codes text[], amounts bigint[]) RETURNS text
    LANGUAGE sql IMMUTABLE
    RETURN (SELECT coalesce(string_agg(entry.code || ' ' || entry.amount, E'\n'
                                       ORDER BY entry.code COLLATE "C"), '')
            FROM unnest(codes, amounts) AS entry (code, amount));

-- At commit, once per transaction: it has entries, they balance in each
-- currency, and its hash is theirs. A transaction `ridepay_ledger_post`
-- checked as it posted it, and that gained no entry since, is not read
-- again: that function names it in the transaction-local setting
-- `ridepay.ledger_posted` (the last few it posted, `,<id>,` each), and an
-- entry added to it takes the name back out. So the postings of a
-- request add no statement at its commit.
CREATE FUNCTION ridepay_ledger_transaction_checked() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    codes text[];
    amounts bigint[];
BEGIN
    IF position(',' || NEW.id || ',' IN coalesce(current_setting('ridepay.ledger_posted', true), ''))
       > 0 THEN
        RETURN NULL;
    END IF;
    SELECT array_agg(account.code), array_agg(entry.amount_cents) INTO codes, amounts
    FROM ledger_entries AS entry
    JOIN ledger_accounts AS account ON account.id = entry.account_id
    WHERE entry.transaction_id = NEW.id;
    PERFORM ridepay_ledger_balanced(NEW.source, codes, amounts);
    IF NEW.entries_hash <> sha256(convert_to(ridepay_ledger_canonical(codes, amounts), 'UTF8')) THEN
        RAISE EXCEPTION 'the hash of ledger transaction % is not that of its entries', NEW.source
            USING ERRCODE = '23514';
    END IF;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER ledger_transactions_balanced AFTER INSERT ON ledger_transactions
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    EXECUTE FUNCTION ridepay_ledger_transaction_checked();

-- Refuses entries (account codes, amounts) that are none, or that do not
-- balance in each currency (an account's code ends with its currency).
CREATE FUNCTION ridepay_ledger_balanced(source text, codes text[], amounts bigint[]) RETURNS void
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

-- An entry joins only a transaction made in its own database transaction
-- (whose `created_at` is that transaction's start, `now()`), so the check
-- at that commit sees every entry it will ever have.
CREATE FUNCTION ridepay_ledger_entry_joins_new() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    posted text := current_setting('ridepay.ledger_posted', true);
BEGIN
    IF (SELECT created_at FROM ledger_transactions WHERE id = NEW.transaction_id)
       IS DISTINCT FROM now() THEN
        RAISE EXCEPTION 'ledger transaction % was posted earlier: post a transaction of its own',
            NEW.transaction_id USING ERRCODE = '42501';
    END IF;
    IF position(',' || NEW.transaction_id || ',' IN coalesce(posted, '')) > 0 THEN
        posted := set_config('ridepay.ledger_posted',
                             replace(posted, ',' || NEW.transaction_id || ',', ','), true);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER ledger_entries_join_new BEFORE INSERT ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ridepay_ledger_entry_joins_new();

-- Posts a transaction of `codes` and their `amounts` for the movement
-- `source`, checked as it is posted, unless that movement was posted
-- already: returns its id, or NULL when it was.
CREATE FUNCTION ridepay_ledger_post(kind text, source text, ride_id bigint, reverses bigint,
                                    codes text[], amounts bigint[]) RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    posted bigint;
    entries bigint;
    named text;
BEGIN
    PERFORM ridepay_ledger_balanced(source, codes, amounts);
    INSERT INTO ledger_transactions AS t (kind, source, ride_id, reverses, entries_hash)
    VALUES (kind, source, ride_id, reverses,
            sha256(convert_to(ridepay_ledger_canonical(codes, amounts), 'UTF8')))
    ON CONFLICT ON CONSTRAINT ledger_transactions_source_key DO NOTHING
    RETURNING t.id INTO posted;
    IF posted IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO ledger_entries (transaction_id, account_id, amount_cents)
    SELECT posted, account.id, entry.amount
    FROM unnest(codes, amounts) AS entry (code, amount)
    JOIN ledger_accounts AS account ON account.code = entry.code;
    GET DIAGNOSTICS entries = ROW_COUNT;
    IF entries <> cardinality(codes) THEN
        RAISE EXCEPTION 'ledger transaction % names an account that does not exist: %',
            source, codes USING ERRCODE = '23503';
    END IF;
    -- The last few only: a database transaction that posts many (the
    -- opening, a backfill) has the older ones checked at commit.
    named := coalesce(current_setting('ridepay.ledger_posted', true), '');
    named := set_config('ridepay.ledger_posted',
                        CASE WHEN length(named) > 200 OR named = '' THEN ',' ELSE named END
                        || posted || ',', true);
    RETURN posted;
END
$$;

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

-- The charges that captured a ride's money, as the answers that recorded
-- the captures carried them: the fare's (with a cancellation fee, or a tip
-- added before the capture) and a tip's paid after it. The balance
-- transaction and its fee come with the answer (call version 4) or from
-- reconciliation later.
CREATE TABLE charges (
    id TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 255),
    ride_id BIGINT NOT NULL REFERENCES rides (id),
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    currency TEXT NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    balance_transaction_id TEXT,
    fee_cents BIGINT CHECK (fee_cents >= 0),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((balance_transaction_id IS NULL) = (fee_cents IS NULL))
);
CREATE INDEX charges_ride ON charges (ride_id);
CREATE INDEX charges_without_fee ON charges (created_at) WHERE fee_cents IS NULL;

-- A charge's capture, and its fee once known, posted by the statement that
-- records them.
CREATE FUNCTION ridepay_ledger_charge_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    gateway text := 'gateway:' || NEW.currency;
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM ridepay_ledger_post('capture', NEW.id || ':capture', NEW.ride_id, NULL,
            ARRAY[gateway, 'platform:unassigned:' || NEW.currency],
            ARRAY[NEW.amount_cents, -NEW.amount_cents]);
    END IF;
    IF NEW.fee_cents > 0 THEN
        PERFORM ridepay_ledger_post('fee', NEW.balance_transaction_id || ':fee', NEW.ride_id, NULL,
            ARRAY['platform:fees:' || NEW.currency, gateway], ARRAY[NEW.fee_cents, -NEW.fee_cents]);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER charges_post_to_ledger AFTER INSERT ON charges
    FOR EACH ROW EXECUTE FUNCTION ridepay_ledger_charge_changed();
CREATE TRIGGER charges_post_fee_to_ledger AFTER UPDATE ON charges
    FOR EACH ROW WHEN (OLD.fee_cents IS NULL AND NEW.fee_cents IS NOT NULL)
    EXECUTE FUNCTION ridepay_ledger_charge_changed();
CREATE TRIGGER charges_append_only BEFORE DELETE ON charges
    FOR EACH ROW EXECUTE FUNCTION ridepay_ledger_append_only();

-- A refund is posted when the gateway reports it made (`pending` or
-- `succeeded`: the gateway moves the balance then), and reversed if it
-- ends `failed` or `canceled` after that.
CREATE FUNCTION ridepay_ledger_refund_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    into_gateway bigint := CASE WHEN NEW.status IN ('pending', 'succeeded')
                                THEN -NEW.amount_cents ELSE NEW.amount_cents END;
    refunded bigint;
BEGIN
    IF into_gateway > 0 THEN
        SELECT id INTO refunded FROM ledger_transactions
        WHERE source = NEW.gateway_refund_id || ':refund';
        IF refunded IS NULL THEN
            RETURN NULL;
        END IF;
    END IF;
    PERFORM ridepay_ledger_post(
        CASE WHEN refunded IS NULL THEN 'refund' ELSE 'refund_failed' END,
        NEW.gateway_refund_id || CASE WHEN refunded IS NULL THEN ':refund' ELSE ':failed' END,
        NEW.ride_id, refunded,
        ARRAY['gateway:' || NEW.currency, 'platform:unassigned:' || NEW.currency],
        ARRAY[into_gateway, -into_gateway]);
    RETURN NULL;
END
$$;
CREATE TRIGGER refunds_post_new_to_ledger AFTER INSERT ON refunds
    FOR EACH ROW WHEN (NEW.gateway_refund_id IS NOT NULL)
    EXECUTE FUNCTION ridepay_ledger_refund_changed();
CREATE TRIGGER refunds_post_to_ledger AFTER UPDATE ON refunds
    FOR EACH ROW WHEN (NEW.gateway_refund_id IS NOT NULL
                       AND (OLD.gateway_refund_id IS NULL OR NEW.status <> OLD.status))
    EXECUTE FUNCTION ridepay_ledger_refund_changed();

-- What the rides hold when the ledger starts: each ride's captured amount
-- into the gateway, owed to no driver yet (an opening transaction); each
-- refund the gateway made as the refund it is, so that its failure later
-- is reversed like any other; and what was refunded with no gateway refund
-- to name back out, as an opening too. No fees: the fee and gateway
-- invariants count from `ledger_started_at`.
SELECT ridepay_ledger_post('opening', 'opening:ride:' || ride.id || ':captured', ride.id, NULL,
                           ARRAY['gateway:' || ride.currency,
                                 'platform:unassigned:' || ride.currency],
                           ARRAY[ride.amount_captured_cents, -ride.amount_captured_cents])
FROM rides AS ride WHERE ride.amount_captured_cents > 0;
SELECT ridepay_ledger_post('refund', refund.gateway_refund_id || ':refund', refund.ride_id, NULL,
                           ARRAY['gateway:' || refund.currency,
                                 'platform:unassigned:' || refund.currency],
                           ARRAY[-refund.amount_cents, refund.amount_cents])
FROM refunds AS refund
WHERE refund.gateway_refund_id IS NOT NULL AND refund.status IN ('pending', 'succeeded');
SELECT ridepay_ledger_post('opening', 'opening:ride:' || ride.id || ':refunded', ride.id, NULL,
                           ARRAY['gateway:' || ride.currency,
                                 'platform:unassigned:' || ride.currency],
                           ARRAY[-unnamed.amount, unnamed.amount])
FROM rides AS ride,
     LATERAL (SELECT (ride.amount_refunded_cents - coalesce(sum(refund.amount_cents), 0))::bigint AS amount
              FROM refunds AS refund
              WHERE refund.ride_id = ride.id AND refund.status = 'succeeded'
                AND refund.gateway_refund_id IS NOT NULL) AS unnamed
WHERE unnamed.amount <> 0;
