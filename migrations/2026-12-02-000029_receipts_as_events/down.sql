CREATE TABLE staged_jobs (
    id BIGSERIAL PRIMARY KEY,
    job_type TEXT NOT NULL CHECK (job_type IN ('ride_receipt')),
    payload JSONB NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    run_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    locked_until TIMESTAMPTZ,
    last_error TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX staged_jobs_due ON staged_jobs (run_at, id);

-- The installation's receipts still to deliver go back to being jobs.
INSERT INTO staged_jobs (job_type, payload)
SELECT 'ride_receipt', jsonb_build_object('ride_id', event.ride_id, 'user_id', event.user_id)
FROM webhook_deliveries delivery
JOIN webhook_endpoints endpoint ON endpoint.id = delivery.endpoint_id AND endpoint.user_id IS NULL
JOIN webhook_events event ON event.id = delivery.event_id
WHERE delivery.status = 'pending' AND event.ride_id IS NOT NULL
ORDER BY delivery.id;

CREATE OR REPLACE FUNCTION ridepay_stage_event(ride rides, type text, extra jsonb) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    event_id text := 'msg_' || replace(gen_random_uuid()::text, '-', '');
    staged_at timestamptz := clock_timestamp();
BEGIN
    INSERT INTO webhook_events (id, user_id, ride_id, type, sequence, body, created_at)
    VALUES (
        event_id, ride.user_id, ride.id, type, ride.event_sequence,
        convert_to(jsonb_build_object(
            'id', event_id,
            'type', type,
            'timestamp', ridepay_instant(staged_at),
            'sequence', ride.event_sequence,
            'data', jsonb_build_object('ride', ridepay_ride_json(ride)) || extra
        )::text, 'UTF8'),
        staged_at
    );
    INSERT INTO webhook_deliveries (endpoint_id, event_id)
    SELECT endpoint.id, event_id
    FROM webhook_endpoints endpoint
    WHERE endpoint.user_id = ride.user_id
      AND endpoint.status = 'enabled'
      AND EXISTS (
          SELECT 1 FROM unnest(endpoint.events) pattern
          WHERE pattern = type
             OR pattern = '*'
             OR (right(pattern, 2) = '.*' AND starts_with(type, left(pattern, -1)))
      );
END
$$;
DROP FUNCTION ridepay_record_event(rides, text, jsonb);

DELETE FROM webhook_endpoints WHERE user_id IS NULL;
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_installation;
ALTER TABLE webhook_endpoints ALTER COLUMN user_id SET NOT NULL;
COMMENT ON TABLE receipts IS NULL;
