-- Receipts become events: RECEIPT_WEBHOOK_URL is the installation's own
-- destination (the one with no user) of `ride.captured`, `ride.canceled`
-- and `ride.tipped`, signed like every other. It exists from here on, as
-- id 0 (the one such row; users' ids keep coming from the sequence),
-- disabled until a start-up gives it the URL and its secret
-- (`outbound_webhooks::installation`); its URL until then names nothing
-- (`.invalid` never resolves).
ALTER TABLE webhook_endpoints ALTER COLUMN user_id DROP NOT NULL;
ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_installation
    CHECK ((user_id IS NULL) = (id = 0));
INSERT INTO webhook_endpoints (id, user_id, url, events, status, disabled_reason, secret)
VALUES (
    0,
    NULL,
    'https://receipts.invalid/',
    ARRAY['ride.captured', 'ride.canceled', 'ride.tipped'],
    'disabled',
    'RECEIPT_WEBHOOK_URL is not set',
    'whsec_' || encode(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''),
                              'hex'), 'base64')
);

-- Records event `type` of `ride` (its sequence already counted), with
-- `extra` beside the ride in `data`: its id.
CREATE FUNCTION ridepay_record_event(ride rides, type text, extra jsonb) RETURNS text
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
    RETURN event_id;
END
$$;

-- Stages the event, and one delivery to each enabled destination subscribed
-- to it now: the ride's user's, and the installation's.
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

-- Each receipt job still staged becomes its ride's event (`ride.canceled`
-- for a cancellation's fee, `ride.captured` otherwise), carrying the ride
-- as it is now, kept for the installation's destination alone: its
-- delivery waits there until RECEIPT_WEBHOOK_URL is set. The user's own
-- destinations had the change's event when it was made.
DO $$
DECLARE
    job record;
    ride rides;
BEGIN
    FOR job IN SELECT payload FROM staged_jobs WHERE job_type = 'ride_receipt' ORDER BY id LOOP
        UPDATE rides SET event_sequence = event_sequence + 1
            WHERE id = (job.payload ->> 'ride_id')::bigint
            RETURNING * INTO ride;
        CONTINUE WHEN NOT FOUND;
        INSERT INTO webhook_deliveries (endpoint_id, event_id)
        SELECT endpoint.id, ridepay_record_event(
            ride,
            CASE ride.status WHEN 'canceled' THEN 'ride.canceled' ELSE 'ride.captured' END,
            '{}'::jsonb)
        FROM webhook_endpoints endpoint WHERE endpoint.user_id IS NULL;
    END LOOP;
END
$$;
DROP TABLE staged_jobs;

COMMENT ON TABLE receipts IS
    'The receipts recorded before they became events, where no RECEIPT_WEBHOOK_URL was set. '
    'No longer written or read: drop it once its rows are not wanted.';
