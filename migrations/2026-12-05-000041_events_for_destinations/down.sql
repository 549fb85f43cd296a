CREATE OR REPLACE FUNCTION ridepay_stage_event(ride rides, type text, extra jsonb) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    event_id text := ridepay_record_event(ride, type, extra);
BEGIN
    INSERT INTO webhook_deliveries (endpoint_id, event_id)
    SELECT endpoint.id, event_id
    FROM webhook_endpoints endpoint
    WHERE (endpoint.user_id = ride.user_id OR endpoint.user_id IS NULL)
      AND endpoint.status = 'enabled'
      AND EXISTS (
          SELECT 1 FROM unnest(endpoint.events) pattern
          WHERE pattern = type
             OR pattern = '*'
             OR (right(pattern, 2) = '.*' AND starts_with(type, left(pattern, -1)))
      );
END
$$;
