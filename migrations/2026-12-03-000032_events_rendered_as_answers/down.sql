-- RFC 3339, UTC, microseconds: as the API shows instants.
CREATE FUNCTION ridepay_instant(at timestamptz) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    RETURN to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');

-- The ride JSON of the contract (`wire::ride::RideJson`), from its row: what
-- every event carries. A test holds the two renderings to each other.
CREATE FUNCTION ridepay_ride_json(ride rides) RETURNS jsonb
    LANGUAGE sql STABLE
    RETURN jsonb_build_object(
        'id', ride.id,
        'origin_lat', ride.origin_lat,
        'origin_lon', ride.origin_lon,
        'target_lat', ride.target_lat,
        'target_lon', ride.target_lon,
        'amount_cents', ride.amount_cents,
        'currency', ride.currency,
        'capture_method', ride.capture_method,
        'status', ride.status,
        'payment_intent_id', ride.payment_intent_id,
        'amount_authorized_cents', ride.amount_authorized_cents,
        'amount_captured_cents', ride.amount_captured_cents,
        'amount_refunded_cents', ride.amount_refunded_cents,
        'amount_capturable_max_cents', ride.amount_capturable_max_cents,
        'hold_expires_at', ridepay_instant(ride.hold_expires_at),
        'tip_cents', ride.tip_cents,
        'next_action', CASE
            WHEN ride.status = 'requires_action' AND jsonb_typeof(ride.next_action) = 'object'
            THEN ride.next_action || jsonb_build_object('client_secret', ride.client_secret)
        END,
        'created_at', ridepay_instant(ride.created_at)
    );

-- The events staged with their rows get the body the database renders.
UPDATE webhook_events SET
    body = convert_to(jsonb_build_object(
        'id', id,
        'type', type,
        'timestamp', ridepay_instant(created_at),
        'sequence', sequence,
        'data', jsonb_build_object(
            'ride', ridepay_ride_json(jsonb_populate_record(NULL::rides, snapshot -> 'ride')))
            || CASE WHEN snapshot ? 'refund' THEN jsonb_build_object('refund', jsonb_build_object(
                'id', coalesce(snapshot #>> '{refund,part_of}', snapshot #>> '{refund,id}')::bigint,
                'ride_id', (snapshot #>> '{refund,ride_id}')::bigint,
                'amount_cents', (snapshot #>> '{refund,amount_cents}')::bigint,
                'currency', snapshot #>> '{refund,currency}',
                'reason', snapshot #>> '{refund,reason}',
                'status', snapshot #>> '{refund,status}',
                'payment_intent_id', snapshot #>> '{refund,payment_intent_id}',
                'gateway_refund_id', snapshot #>> '{refund,gateway_refund_id}',
                'created_at', ridepay_instant((snapshot #>> '{refund,created_at}')::timestamptz)))
            ELSE '{}'::jsonb END
    )::text, 'UTF8'),
    snapshot = NULL
WHERE snapshot IS NOT NULL;

-- Records event `type` of `ride` (its sequence already counted), with
-- `extra` beside the ride in `data`: its id.
CREATE OR REPLACE FUNCTION ridepay_record_event(ride rides, type text, extra jsonb) RETURNS text
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

-- A refund (or part of one) settled: `refund.succeeded` or `refund.failed`,
-- with the ride as the transaction leaves it (the trigger runs at commit,
-- after the ride's refunded amount has followed). Each part of a split
-- refund reports itself, under its refund's id.
CREATE OR REPLACE FUNCTION ridepay_refund_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    ride rides;
BEGIN
    IF NEW.status NOT IN ('succeeded', 'failed')
       OR (TG_OP = 'UPDATE' AND NEW.status IS NOT DISTINCT FROM OLD.status) THEN
        RETURN NEW;
    END IF;
    UPDATE rides SET event_sequence = event_sequence + 1 WHERE id = NEW.ride_id
        RETURNING * INTO ride;
    PERFORM ridepay_stage_event(ride, 'refund.' || NEW.status, jsonb_build_object(
        'refund', jsonb_build_object(
            'id', coalesce(NEW.part_of, NEW.id),
            'ride_id', NEW.ride_id,
            'amount_cents', NEW.amount_cents,
            'currency', NEW.currency,
            'reason', NEW.reason,
            'status', NEW.status,
            'payment_intent_id', NEW.payment_intent_id,
            'gateway_refund_id', NEW.gateway_refund_id,
            'created_at', ridepay_instant(NEW.created_at)
        )
    ));
    RETURN NEW;
END
$$;

ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_body_or_snapshot;
ALTER TABLE webhook_events ALTER COLUMN body SET NOT NULL;
ALTER TABLE webhook_events DROP COLUMN snapshot;
