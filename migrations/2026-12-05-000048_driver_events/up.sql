-- The events of drivers and of their pay: `ride.driver_assigned` to the
-- ride's user's destinations and the platform's; `ride.driver_paid`,
-- `ride.driver_transfer_failed` and `driver.updated` to the platform's
-- alone (destinations of users whose role is `platform`). Each is staged
-- by a trigger in the transaction of the change it reports, with the rows
-- the change left, as every event is. A ride's events carry its driver's
-- rows (`ridepay_ride_driver`), from which the sender renders the view of
-- each destination: the rider's (who drives) or the platform's (their pay).

-- A driver's events are numbered as a ride's are.
ALTER TABLE drivers ADD COLUMN event_sequence BIGINT NOT NULL DEFAULT 0;

-- An event about a driver belongs to no user.
ALTER TABLE webhook_events ALTER COLUMN user_id DROP NOT NULL;
ALTER TABLE webhook_events ADD COLUMN driver_id BIGINT REFERENCES drivers (id) ON DELETE CASCADE;
ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_ride_or_test;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_ride_driver_or_test CHECK (
    (ride_id IS NOT NULL AND sequence IS NOT NULL AND user_id IS NOT NULL)
    OR (driver_id IS NOT NULL AND sequence IS NOT NULL)
    OR (type = 'webhook_endpoint.test' AND user_id IS NOT NULL)
);
CREATE UNIQUE INDEX webhook_events_driver_sequence ON webhook_events (driver_id, sequence)
    WHERE driver_id IS NOT NULL;

-- A ride's driver and their pay, as the platform reads them
-- (`drivers::pay`): the driver's public id, their entitlement to what the
-- ride captured after its refunds, what the ride kept of its charges, and
-- the transfers owed or made; NULL for a ride without a driver.
CREATE FUNCTION ridepay_ride_driver(of_ride bigint) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    assigned ride_drivers;
    ride rides;
    entitled bigint;
    captured bigint;
BEGIN
    SELECT * INTO assigned FROM ride_drivers AS d WHERE d.ride_id = of_ride;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT * INTO STRICT ride FROM rides AS r WHERE r.id = of_ride;
    SELECT coalesce(sum(ridepay_driver_entitlement(charge.id, assigned.commission_bps)), 0),
           coalesce(sum(charge.amount_cents), 0)
        INTO entitled, captured
    FROM charges AS charge WHERE charge.ride_id = of_ride;
    RETURN jsonb_build_object(
        'id', (SELECT driver.public_id FROM drivers AS driver WHERE driver.id = assigned.driver_id),
        'entitled_cents', entitled,
        'kept_cents', captured - ridepay_refunded(of_ride, ride.payment_intent_id)
            - CASE WHEN ride.tip_payment_intent_id IS NULL THEN 0
                   ELSE ridepay_refunded(of_ride, ride.tip_payment_intent_id) END,
        'transfers', (SELECT coalesce(jsonb_agg(to_jsonb(transfer) ORDER BY transfer.id), '[]')
                      FROM transfers AS transfer WHERE transfer.ride_id = of_ride)
    );
END
$$;

-- Each of `driver_ids`' payable accounts (`<payable_code>:<currency>`) in
-- the ledger, with its balance and the transfers less reversals posted to
-- it: what `GET /api/drivers/{id}` shows as `balances`.
CREATE FUNCTION ridepay_driver_balances(driver_ids bigint[])
    RETURNS TABLE (payable_code text, currency text, balance bigint, transferred bigint)
    LANGUAGE sql
    BEGIN ATOMIC
        SELECT d.payable_code, a.currency,
               coalesce(sum(e.amount_cents), 0)::bigint,
               coalesce(sum(e.amount_cents) FILTER
                   (WHERE t.kind IN ('transfer', 'transfer_reversal')), 0)::bigint
        FROM drivers d
        JOIN ledger_accounts a ON a.code = d.payable_code || ':' || a.currency
        LEFT JOIN ledger_entries e ON e.account_id = a.id
        LEFT JOIN ledger_transactions t ON t.id = e.transaction_id
        WHERE d.id = ANY (driver_ids)
        GROUP BY d.payable_code, a.currency;
    END;

-- The enabled destinations subscribed now to event `type` of `rider`'s
-- ride (NULL: of a driver). A platform user's destinations receive the
-- `ride.driver_*` events of every ride and `driver.*`; the ride's user's
-- and the installation's every other event of the ride, and
-- `ride.driver_assigned`.
CREATE FUNCTION ridepay_event_destinations(rider bigint, type text) RETURNS bigint[]
    LANGUAGE sql
    RETURN (
        SELECT array_agg(endpoint.id)
        FROM webhook_endpoints AS endpoint
        LEFT JOIN users AS owner ON owner.id = endpoint.user_id
        WHERE endpoint.status = 'enabled'
          AND CASE WHEN owner.role = 'platform'
                   THEN starts_with(ridepay_event_destinations.type, 'ride.driver_')
                        OR starts_with(ridepay_event_destinations.type, 'driver.')
                   ELSE (endpoint.user_id = ridepay_event_destinations.rider
                         OR endpoint.user_id IS NULL)
                        AND ridepay_event_destinations.type
                            NOT IN ('ride.driver_paid', 'ride.driver_transfer_failed')
                        AND NOT starts_with(ridepay_event_destinations.type, 'driver.')
              END
          AND EXISTS (
              SELECT 1 FROM unnest(endpoint.events) AS pattern
              WHERE pattern = ridepay_event_destinations.type
                 OR pattern = '*'
                 OR (right(pattern, 2) = '.*'
                     AND starts_with(ridepay_event_destinations.type, left(pattern, -1)))
          )
    );

-- Records event `type` of `ride` (its sequence already counted), with
-- `extra` (a refund) and, once it has one, its driver's pay beside the
-- ride in its snapshot: its id.
CREATE OR REPLACE FUNCTION ridepay_record_event(ride rides, type text, extra jsonb) RETURNS text
    LANGUAGE plpgsql AS $$
DECLARE
    event_id text := 'msg_' || replace(gen_random_uuid()::text, '-', '');
    pay jsonb := ridepay_ride_driver(ride.id);
BEGIN
    INSERT INTO webhook_events (id, user_id, ride_id, type, sequence, snapshot, created_at)
    VALUES (event_id, ride.user_id, ride.id, type, ride.event_sequence,
            jsonb_build_object('ride', to_jsonb(ride)) || extra
                || CASE WHEN pay IS NULL THEN '{}' ELSE jsonb_build_object('ride_driver', pay) END,
            clock_timestamp());
    RETURN event_id;
END
$$;

-- One delivery of event `event` to each of `destinations`.
CREATE FUNCTION ridepay_deliver(event text, destinations bigint[]) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (endpoint_id, event_id)
    SELECT destination, event FROM unnest(destinations) AS destination;
END
$$;

-- Stages the event, and one delivery to each destination that receives it.
CREATE OR REPLACE FUNCTION ridepay_stage_event(ride rides, type text, extra jsonb) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    destinations bigint[] := ridepay_event_destinations(ride.user_id, type);
BEGIN
    IF destinations IS NOT NULL THEN
        PERFORM ridepay_deliver(ridepay_record_event(ride, type, extra), destinations);
    END IF;
END
$$;

-- Counts event `type` in the sequence of ride `of_ride` and stages it.
CREATE FUNCTION ridepay_stage_ride_event(of_ride bigint, type text) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    ride rides;
BEGIN
    UPDATE rides SET event_sequence = event_sequence + 1 WHERE id = of_ride
        RETURNING * INTO STRICT ride;
    PERFORM ridepay_stage_event(ride, type, '{}'::jsonb);
END
$$;

-- A ride given its driver: `ride.driver_assigned`, at commit, so that it
-- carries the transfers the assignment made owed.
CREATE FUNCTION ridepay_driver_assigned() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ridepay_stage_ride_event(NEW.ride_id, 'ride.driver_assigned');
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER ride_drivers_stage_events AFTER INSERT ON ride_drivers
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ridepay_driver_assigned();

-- A transfer recorded `paid` or `failed`: `ride.driver_paid` or
-- `ride.driver_transfer_failed`, at commit, with the ride and its pay as
-- the transaction leaves them. A transfer failing again reports nothing
-- new.
CREATE FUNCTION ridepay_transfer_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ridepay_stage_ride_event(NEW.ride_id, CASE NEW.status
        WHEN 'paid' THEN 'ride.driver_paid' ELSE 'ride.driver_transfer_failed' END);
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER transfers_stage_events AFTER UPDATE OF status ON transfers
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN (NEW.status IN ('paid', 'failed') AND NEW.status IS DISTINCT FROM OLD.status)
    EXECUTE FUNCTION ridepay_transfer_changed();

-- A driver's status changed: `driver.updated`, at commit, carrying the
-- driver's row and balances as the transaction leaves them, counted in the
-- driver's sequence.
CREATE FUNCTION ridepay_driver_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    destinations bigint[] := ridepay_event_destinations(NULL, 'driver.updated');
    driver drivers;
    event_id text := 'msg_' || replace(gen_random_uuid()::text, '-', '');
BEGIN
    UPDATE drivers SET event_sequence = event_sequence + 1 WHERE id = NEW.id
        RETURNING * INTO STRICT driver;
    IF destinations IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_events (id, driver_id, type, sequence, snapshot, created_at)
    VALUES (event_id, driver.id, 'driver.updated', driver.event_sequence,
            jsonb_build_object('driver', to_jsonb(driver), 'balances',
                (SELECT coalesce(jsonb_agg(to_jsonb(account) ORDER BY account.currency), '[]')
                 FROM ridepay_driver_balances(ARRAY[driver.id]) AS account)),
            clock_timestamp());
    PERFORM ridepay_deliver(event_id, destinations);
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER drivers_stage_events AFTER UPDATE OF status ON drivers
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status)
    EXECUTE FUNCTION ridepay_driver_changed();
