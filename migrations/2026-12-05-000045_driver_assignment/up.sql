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
    -- The entitlement when it was owed (the reallocation posted it).
    entitled_cents BIGINT NOT NULL CHECK (entitled_cents >= 0),
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

-- The PaymentIntent that captured a charge: the one it names, or (for a
-- charge recorded before charges named one) the ride's own. (Parameters
-- are qualified where a column could take their name: rides have a
-- `charge_id`. These functions are left volatile: called by a trigger,
-- they must see what the statement that fired it changed.)
CREATE FUNCTION ridepay_charge_intent(charge_id text) RETURNS text
    LANGUAGE sql
    RETURN (SELECT coalesce(charge.payment_intent_id, ride.payment_intent_id)
            FROM charges AS charge JOIN rides AS ride ON ride.id = charge.ride_id
            WHERE charge.id = ridepay_charge_intent.charge_id);

-- What a ride's refunds took back of its PaymentIntent `intent`, as the
-- ledger posts them: pending or succeeded. A refund of the ride's own
-- payment may name no PaymentIntent.
CREATE FUNCTION ridepay_refunded(ride bigint, intent text) RETURNS bigint
    LANGUAGE sql
    RETURN (SELECT coalesce(sum(refund.amount_cents), 0)
            FROM refunds AS refund JOIN rides ON rides.id = refund.ride_id
            WHERE refund.ride_id = ridepay_refunded.ride
              AND refund.status IN ('pending', 'succeeded')
              AND coalesce(refund.payment_intent_id, rides.payment_intent_id)
                  IS NOT DISTINCT FROM ridepay_refunded.intent);

-- The driver's entitlement to what `charge_id` captured, at `bps` of
-- commission, had `refunded` been refunded of it. Of a fare F the driver's
-- share is F - floor(F * bps / 10000); after R of it is refunded, share -
-- floor(R * share / F). A tip is the driver's to the cent, less what was
-- refunded of it. A refund of a charge that carries both takes the fare
-- first, as refunds split a ride's payments.
CREATE FUNCTION ridepay_driver_entitlement(charge_id text, bps integer, refunded bigint)
    RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    charge charges;
    ride rides;
    fare bigint;
    tip bigint;
    share bigint;
BEGIN
    SELECT * INTO STRICT charge FROM charges WHERE id = charge_id;
    SELECT * INTO STRICT ride FROM rides WHERE id = charge.ride_id;
    IF ridepay_charge_intent(charge_id) = ride.tip_payment_intent_id THEN
        fare := 0;
        tip := charge.amount_cents;
    ELSE
        -- A tip added before the capture rides in the fare's charge.
        tip := CASE WHEN ride.tip_payment_intent_id IS NULL THEN ride.tip_cents ELSE 0 END;
        fare := charge.amount_cents - tip;
    END IF;
    share := fare - fare * bps / 10000;
    RETURN share - CASE WHEN fare = 0 THEN 0 ELSE least(refunded, fare) * share / fare END
           + tip - greatest(refunded - fare, 0);
END
$$;

-- The entitlement after what was refunded of the charge.
CREATE FUNCTION ridepay_driver_entitlement(charge_id text, bps integer) RETURNS bigint
    LANGUAGE sql
    RETURN ridepay_driver_entitlement(charge_id, bps,
        (SELECT ridepay_refunded(charge.ride_id, ridepay_charge_intent(charge.id))
         FROM charges AS charge WHERE charge.id = ridepay_driver_entitlement.charge_id));

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
    kept := charge.amount_cents - ridepay_refunded(ride.id, ridepay_charge_intent(charge_id));
    PERFORM ridepay_ledger_post_nonzero('reallocation', charge_id || ':reallocation', ride.id,
        ARRAY['platform:unassigned:' || charge.currency, payable,
              'platform:commission:' || charge.currency],
        ARRAY[kept, -entitlement, entitlement - kept]);
    SELECT -coalesce(sum(entry.amount_cents), 0) INTO owed
    FROM ledger_entries AS entry JOIN ledger_accounts AS account ON account.id = entry.account_id
    WHERE account.code = payable;
    amount := least(entitlement, greatest(owed, 0));
    INSERT INTO transfers (ride_id, driver_id, source_charge, currency, entitled_cents,
                           amount_cents, netted_cents, status)
    VALUES (ride.id, assigned.driver_id, charge_id, charge.currency, entitlement, amount,
            entitlement - amount,
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

-- A refund is posted as before, but a refund of a charge its driver has
-- a share of takes back the change in their entitlement from their
-- payable, and the rest from the commission; a transfer owed and not made
-- yet owes that much less (what it cannot take stays as the driver's debt).
-- A refund that fails after it was posted is taken back entry for entry,
-- and the transfer not made yet owes again what the refund took off it.
CREATE OR REPLACE FUNCTION ridepay_ledger_refund_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    into_gateway bigint := CASE WHEN NEW.status IN ('pending', 'succeeded')
                                THEN -NEW.amount_cents ELSE NEW.amount_cents END;
    refunded bigint;
    refunded_intent text;
    charge_id text;
    owed transfers;
    payable text;
    bps integer;
    taken bigint;
    codes text[];
    amounts bigint[];
BEGIN
    SELECT coalesce(NEW.payment_intent_id, ride.payment_intent_id) INTO refunded_intent
    FROM rides AS ride WHERE ride.id = NEW.ride_id;
    SELECT charge.id INTO charge_id FROM charges AS charge
    WHERE charge.ride_id = NEW.ride_id
      AND ridepay_charge_intent(charge.id) IS NOT DISTINCT FROM refunded_intent;
    SELECT * INTO owed FROM transfers
    WHERE ride_id = NEW.ride_id AND source_charge = charge_id FOR UPDATE;
    IF FOUND THEN
        SELECT payable_code || ':' || NEW.currency INTO STRICT payable
        FROM drivers WHERE id = owed.driver_id;
    END IF;
    IF into_gateway > 0 THEN
        SELECT id INTO refunded FROM ledger_transactions
        WHERE source = NEW.gateway_refund_id || ':refund';
        IF refunded IS NULL THEN
            RETURN NULL;
        END IF;
        SELECT array_agg(account.code), array_agg(-entry.amount_cents),
               coalesce(sum(entry.amount_cents) FILTER (WHERE account.code = payable), 0)
            INTO codes, amounts, taken
        FROM ledger_entries AS entry JOIN ledger_accounts AS account ON account.id = entry.account_id
        WHERE entry.transaction_id = refunded;
        IF ridepay_ledger_post('refund_failed', NEW.gateway_refund_id || ':failed', NEW.ride_id,
                               refunded, codes, amounts) IS NOT NULL
           AND owed.gateway_transfer_id IS NULL AND taken > 0 THEN
            PERFORM ridepay_transfer_owes(owed, least(owed.amount_cents + taken,
                ridepay_driver_entitlement(charge_id, (SELECT commission_bps FROM ride_drivers
                                                        WHERE ride_id = NEW.ride_id))
                - owed.netted_cents));
        END IF;
        RETURN NULL;
    END IF;
    IF owed.id IS NULL THEN
        PERFORM ridepay_ledger_post('refund', NEW.gateway_refund_id || ':refund', NEW.ride_id, NULL,
            ARRAY['gateway:' || NEW.currency, 'platform:unassigned:' || NEW.currency],
            ARRAY[into_gateway, -into_gateway]);
        RETURN NULL;
    END IF;
    SELECT commission_bps INTO STRICT bps FROM ride_drivers WHERE ride_id = NEW.ride_id;
    taken := ridepay_driver_entitlement(charge_id, bps,
                 ridepay_refunded(NEW.ride_id, refunded_intent) - NEW.amount_cents)
             - ridepay_driver_entitlement(charge_id, bps);
    IF ridepay_ledger_post_nonzero('refund', NEW.gateway_refund_id || ':refund', NEW.ride_id,
           ARRAY['gateway:' || NEW.currency, payable, 'platform:commission:' || NEW.currency],
           ARRAY[into_gateway, taken, NEW.amount_cents - taken]) IS NOT NULL
       AND owed.gateway_transfer_id IS NULL THEN
        PERFORM ridepay_transfer_owes(owed, owed.amount_cents - least(taken, owed.amount_cents));
    END IF;
    RETURN NULL;
END
$$;

-- A transfer not made yet, owing `amount` now.
CREATE FUNCTION ridepay_transfer_owes(owed transfers, amount bigint) RETURNS void
    LANGUAGE sql
    BEGIN ATOMIC
        UPDATE transfers
        SET amount_cents = amount,
            status = CASE WHEN amount = 0 THEN 'netted'
                          WHEN status = 'netted' THEN 'pending' ELSE status END,
            updated_at = now()
        WHERE id = owed.id;
    END;
