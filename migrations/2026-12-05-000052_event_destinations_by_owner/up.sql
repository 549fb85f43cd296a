-- The destinations of an event are looked up by their owners, through
-- indexes: the ride's user's and the installation's (`webhook_endpoints`
-- by `user_id`), and, for a driver's event, the platform users' (a
-- partial index of them), never by reading every destination there is.

CREATE INDEX users_platform ON users (id) WHERE role = 'platform';

-- Whether a destination subscribed to `events` takes event `type`.
CREATE FUNCTION ridepay_subscribed(events text[], type text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    RETURN EXISTS (
        SELECT 1 FROM unnest(events) AS pattern
        WHERE pattern = type
           OR pattern = '*'
           OR (right(pattern, 2) = '.*' AND starts_with(type, left(pattern, -1))));

CREATE OR REPLACE FUNCTION ridepay_event_destinations(rider bigint, type text) RETURNS bigint[]
    LANGUAGE plpgsql AS $$
DECLARE
    -- The platform receives its drivers' events and `ride.driver_*`; the
    -- ride's user and the installation the ride's own, and who drives it.
    to_platform boolean := starts_with(type, 'ride.driver_') OR starts_with(type, 'driver.');
    to_rider boolean := rider IS NOT NULL
        AND type NOT IN ('ride.driver_paid', 'ride.driver_transfer_failed');
    found bigint[];
BEGIN
    IF to_rider THEN
        SELECT array_agg(endpoint.id) INTO found
        FROM webhook_endpoints AS endpoint
        WHERE (endpoint.user_id = rider OR endpoint.user_id IS NULL)
          AND endpoint.status = 'enabled' AND ridepay_subscribed(endpoint.events, type);
    END IF;
    IF to_platform THEN
        found := found || (SELECT array_agg(endpoint.id)
                           FROM users AS platform
                           JOIN webhook_endpoints AS endpoint ON endpoint.user_id = platform.id
                           WHERE platform.role = 'platform' AND endpoint.status = 'enabled'
                             AND ridepay_subscribed(endpoint.events, type));
    END IF;
    RETURN found;
END
$$;
