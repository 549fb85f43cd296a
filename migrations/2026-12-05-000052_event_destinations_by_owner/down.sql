-- The destinations as they were looked up.
CREATE OR REPLACE FUNCTION ridepay_event_destinations(rider bigint, type text) RETURNS bigint[]
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
DROP FUNCTION ridepay_subscribed(text[], text);
DROP INDEX users_platform;
