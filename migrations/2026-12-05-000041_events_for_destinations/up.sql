-- An event is read only by its deliveries: a change no enabled destination
-- subscribes to stages none (its ride's `sequence` still counts it, so a
-- destination sees the order of the changes it was sent).
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
