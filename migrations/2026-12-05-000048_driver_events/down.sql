DROP TRIGGER drivers_stage_events ON drivers;
DROP FUNCTION ridepay_driver_changed();
DROP TRIGGER transfers_stage_events ON transfers;
DROP FUNCTION ridepay_transfer_changed();
DROP TRIGGER ride_drivers_stage_events ON ride_drivers;
DROP FUNCTION ridepay_driver_assigned();
DROP FUNCTION ridepay_stage_ride_event(bigint, text);

-- The events of drivers and of their pay go: before, no event was either.
DELETE FROM webhook_events
WHERE driver_id IS NOT NULL OR type LIKE 'ride.driver\_%';

CREATE OR REPLACE FUNCTION ridepay_stage_event(ride rides, type text, extra jsonb) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    destinations bigint[];
    event_id text;
BEGIN
    SELECT array_agg(endpoint.id) INTO destinations
    FROM webhook_endpoints endpoint
    WHERE (endpoint.user_id = ride.user_id OR endpoint.user_id IS NULL)
      AND endpoint.status = 'enabled'
      AND EXISTS (
          SELECT 1 FROM unnest(endpoint.events) pattern
          WHERE pattern = type
             OR pattern = '*'
             OR (right(pattern, 2) = '.*' AND starts_with(type, left(pattern, -1)))
      );
    IF destinations IS NULL THEN
        RETURN;
    END IF;
    event_id := ridepay_record_event(ride, type, extra);
    INSERT INTO webhook_deliveries (endpoint_id, event_id)
    SELECT destination, event_id FROM unnest(destinations) AS destination;
END
$$;

CREATE OR REPLACE FUNCTION ridepay_record_event(ride rides, type text, extra jsonb) RETURNS text
    LANGUAGE plpgsql AS $$
DECLARE
    event_id text := 'msg_' || replace(gen_random_uuid()::text, '-', '');
BEGIN
    INSERT INTO webhook_events (id, user_id, ride_id, type, sequence, snapshot, created_at)
    VALUES (event_id, ride.user_id, ride.id, type, ride.event_sequence,
            jsonb_build_object('ride', to_jsonb(ride)) || extra, clock_timestamp());
    RETURN event_id;
END
$$;

DROP FUNCTION ridepay_deliver(text, bigint[]);
DROP FUNCTION ridepay_event_destinations(bigint, text);
DROP FUNCTION ridepay_driver_balances(bigint[]);
DROP FUNCTION ridepay_ride_driver(bigint);

DROP INDEX webhook_events_driver_sequence;
ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_ride_driver_or_test;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_ride_or_test CHECK (
    (ride_id IS NOT NULL AND sequence IS NOT NULL) OR type = 'webhook_endpoint.test'
);
ALTER TABLE webhook_events DROP COLUMN driver_id;
ALTER TABLE webhook_events ALTER COLUMN user_id SET NOT NULL;
ALTER TABLE drivers DROP COLUMN event_sequence;
