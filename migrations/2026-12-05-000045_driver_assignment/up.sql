-- A ride's driver, and what ridepay owes them (docs/API.md "Drivers' pay").
-- The commission is fixed on the ride when its driver is assigned. Once a
-- charge's money is captured and its ride has a driver, whichever comes
-- first, the charge's money moves in the ledger from `platform:unassigned`
-- to the driver's payable (their entitlement) and the commission (the
-- rest), and the transfer ridepay owes for that charge is recorded.
INSERT INTO idempotent_endpoints (name) VALUES ('rides.assign_driver');
INSERT INTO recovery_points (endpoint, point) VALUES
    ('rides.assign_driver', 'started'),
    ('rides.assign_driver', 'finished');

-- A ride's driver, once assigned, with the commission fixed then: a row of
-- its own, so that the rides no driver drives stay as narrow as they were.
CREATE TABLE ride_drivers (
    ride_id BIGINT PRIMARY KEY REFERENCES rides (id),
    driver_id BIGINT NOT NULL REFERENCES drivers (id),
    commission_bps INTEGER NOT NULL CHECK (commission_bps BETWEEN 0 AND 10000),
    idempotency_key_id BIGINT UNIQUE REFERENCES idempotency_keys (id) ON DELETE SET NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX ride_drivers_driver ON ride_drivers (driver_id);

-- Which PaymentIntent captured a charge: the ride's own (its fare, with a
-- tip added before the capture) or a tip's own. Charges recorded before
-- name none, and are taken as the fare's.
ALTER TABLE charges ADD COLUMN payment_intent_id TEXT
    CHECK (char_length(payment_intent_id) BETWEEN 1 AND 255);

-- One transfer owed per ride and source charge. Its amount is fixed when it
-- is owed: the entitlement, less what the driver owed then (`netted_cents`).
CREATE TABLE transfers (
    id BIGSERIAL PRIMARY KEY,
    ride_id BIGINT NOT NULL REFERENCES rides (id),
    driver_id BIGINT NOT NULL REFERENCES drivers (id),
    source_charge TEXT NOT NULL REFERENCES charges (id),
    currency TEXT NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    amount_cents BIGINT NOT NULL CHECK (amount_cents >= 0),
    netted_cents BIGINT NOT NULL CHECK (netted_cents >= 0),
    -- `pending`: owed, not made yet; `paid`: made at the gateway;
    -- `failed`: refused, or not sent to a driver not active; `netted`: 0.
    status TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'failed', 'netted')),
    failure_reason TEXT CHECK (char_length(failure_reason) <= 500),
    gateway_transfer_id TEXT UNIQUE CHECK (char_length(gateway_transfer_id) BETWEEN 1 AND 255),
    amount_reversed_cents BIGINT NOT NULL DEFAULT 0 CHECK (amount_reversed_cents >= 0),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (ride_id, source_charge),
    CHECK ((status = 'netted') = (amount_cents = 0)),
    CHECK ((status = 'paid') = (gateway_transfer_id IS NOT NULL)),
    CHECK (amount_reversed_cents <= amount_cents)
);
CREATE INDEX transfers_to_make ON transfers (created_at) WHERE status IN ('pending', 'failed');
CREATE INDEX transfers_driver ON transfers (driver_id);

-- What a ride's refunds took back of the PaymentIntent `intent` (NULL: the
-- ride's own), as the ledger posts them: pending or succeeded.
CREATE FUNCTION ridepay_refunded(ride bigint, intent text) RETURNS bigint
    LANGUAGE sql STABLE
    RETURN (SELECT coalesce(sum(amount_cents), 0) FROM refunds
            WHERE ride_id = ride AND status IN ('pending', 'succeeded')
              AND payment_intent_id IS NOT DISTINCT FROM intent);

-- The driver's entitlement to what `charge_id` captured, at `bps` of
-- commission, after what was refunded of it. Of a fare F the driver's share
-- is F - floor(F * bps / 10000); after R of it is refunded, share -
-- floor(R * share / F). A tip is the driver's to the cent, less what was
-- refunded of it. A refund of a charge that carries both takes the fare
-- first, as refunds split a ride's payments.
CREATE FUNCTION ridepay_driver_entitlement(charge_id text, bps integer) RETURNS bigint
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    charge charges;
    ride rides;
    tip_charge boolean;
    fare bigint;
    tip bigint;
    refunded bigint;
    share bigint;
BEGIN
    SELECT * INTO STRICT charge FROM charges WHERE id = charge_id;
    SELECT * INTO STRICT ride FROM rides WHERE id = charge.ride_id;
    tip_charge := charge.payment_intent_id IS NOT DISTINCT FROM ride.tip_payment_intent_id
                  AND ride.tip_payment_intent_id IS NOT NULL;
    IF tip_charge THEN
        fare := 0;
        tip := charge.amount_cents;
        refunded := ridepay_refunded(ride.id, ride.tip_payment_intent_id);
    ELSE
        -- A tip added before the capture rides in the fare's charge.
        tip := CASE WHEN ride.tip_payment_intent_id IS NULL THEN ride.tip_cents ELSE 0 END;
        fare := charge.amount_cents - tip;
        refunded := ridepay_refunded(ride.id, NULL);
    END IF;
    share := fare - fare * bps / 10000;
    RETURN share - CASE WHEN fare = 0 THEN 0 ELSE least(refunded, fare) * share / fare END
           + tip - greatest(refunded - fare, 0);
END
$$;

-- Posts the non-zero entries of a transaction (the ledger refuses an entry
-- of 0, and a share or a commission may be 0).
CREATE FUNCTION ridepay_ledger_post_nonzero(kind text, source text, ride_id bigint,
                                            codes text[], amounts bigint[]) RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    kept_codes text[];
    kept_amounts bigint[];
BEGIN
    SELECT array_agg(entry.code), array_agg(entry.amount) INTO kept_codes, kept_amounts
    FROM unnest(codes, amounts) AS entry (code, amount) WHERE entry.amount <> 0;
    IF kept_codes IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN ridepay_ledger_post(kind, source, ride_id, NULL, kept_codes, kept_amounts);
END
$$;

-- Once `charge_id`'s ride has a driver: the charge's money (what is left of
-- it after its refunds) reallocated, and the transfer owed recorded, its
-- amount fixed under the driver's row lock (taken after the ride's, by the
-- caller's change to the ride or to its charges): the entitlement, but
-- never more than the ledger then owes the driver in that currency. Once
-- per charge; nothing for a ride without a driver.
CREATE FUNCTION ridepay_driver_owed(charge_id text) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    charge charges;
    ride rides;
    assigned ride_drivers;
    payable text;
    entitlement bigint;
    kept bigint;
    owed bigint;
    amount bigint;
BEGIN
    SELECT * INTO STRICT charge FROM charges WHERE id = charge_id;
    SELECT * INTO STRICT ride FROM rides WHERE id = charge.ride_id;
    SELECT * INTO assigned FROM ride_drivers WHERE ride_id = ride.id;
    IF NOT FOUND
       OR EXISTS (SELECT 1 FROM transfers WHERE ride_id = ride.id AND source_charge = charge_id) THEN
        RETURN;
    END IF;
    SELECT payable_code || ':' || charge.currency INTO STRICT payable
    FROM drivers WHERE id = assigned.driver_id FOR UPDATE;
    INSERT INTO ledger_accounts (code, kind, currency)
    VALUES (payable, 'liability', charge.currency) ON CONFLICT (code) DO NOTHING;
    entitlement := ridepay_driver_entitlement(charge_id, assigned.commission_bps);
    kept := charge.amount_cents - ridepay_refunded(ride.id,
        CASE WHEN charge.payment_intent_id IS NOT DISTINCT FROM ride.tip_payment_intent_id
             THEN ride.tip_payment_intent_id END);
    PERFORM ridepay_ledger_post_nonzero('reallocation', charge_id || ':reallocation', ride.id,
        ARRAY['platform:unassigned:' || charge.currency, payable,
              'platform:commission:' || charge.currency],
        ARRAY[kept, -entitlement, entitlement - kept]);
    SELECT -coalesce(sum(entry.amount_cents), 0) INTO owed
    FROM ledger_entries AS entry JOIN ledger_accounts AS account ON account.id = entry.account_id
    WHERE account.code = payable;
    amount := least(entitlement, greatest(owed, 0));
    INSERT INTO transfers (ride_id, driver_id, source_charge, currency, amount_cents,
                           netted_cents, status)
    VALUES (ride.id, assigned.driver_id, charge_id, charge.currency, amount, entitlement - amount,
            CASE WHEN amount = 0 THEN 'netted' ELSE 'pending' END);
END
$$;

-- A charge captured on a ride that has its driver already. (Named to fire
-- after `charges_post_to_ledger`, which posts the capture.)
CREATE FUNCTION ridepay_charge_owed_to_driver() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM ride_drivers WHERE ride_id = NEW.ride_id) THEN
        PERFORM ridepay_driver_owed(NEW.id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER charges_transfer_owed AFTER INSERT ON charges
    FOR EACH ROW EXECUTE FUNCTION ridepay_charge_owed_to_driver();
