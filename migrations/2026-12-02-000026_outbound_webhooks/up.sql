-- Outbound webhooks: the destinations users register, the events of their
-- rides (rendered and staged by triggers in the transaction of the change
-- they report, wherever in ridepay it is made), one delivery per event and
-- destination, and every attempt at it.
INSERT INTO idempotent_endpoints (name) VALUES ('webhook_endpoints.create');
INSERT INTO recovery_points (endpoint, point) VALUES
    ('webhook_endpoints.create', 'started'),
    ('webhook_endpoints.create', 'destination_named'),
    ('webhook_endpoints.create', 'finished');

CREATE TABLE webhook_endpoints (
    id BIGSERIAL PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- The key that registered it: the final guard against two for one key.
    idempotency_key_id BIGINT UNIQUE REFERENCES idempotency_keys (id) ON DELETE SET NULL,
    url TEXT NOT NULL CHECK (char_length(url) BETWEEN 1 AND 2048),
    -- Event types, `ride.*`, `refund.*` or `*`.
    events TEXT[] NOT NULL CHECK (cardinality(events) BETWEEN 1 AND 32),
    status TEXT NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
    disabled_reason TEXT CHECK (disabled_reason IS NULL OR char_length(disabled_reason) <= 500),
    -- `whsec_` + base64: kept so it can sign; shown once, when registered.
    secret TEXT NOT NULL CHECK (secret LIKE 'whsec\_%'),
    -- Since when every attempt has failed (NULL: the last one succeeded).
    failing_since TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_user_id ON webhook_endpoints (user_id, id);

-- Each ride's events are numbered in the order they were staged.
ALTER TABLE rides ADD COLUMN event_sequence BIGINT NOT NULL DEFAULT 0;

CREATE TABLE webhook_events (
    -- `msg_...`: the `webhook-id` of every delivery of it.
    id TEXT PRIMARY KEY CHECK (id ~ '^msg_[0-9a-f]{32}$'),
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    ride_id BIGINT NOT NULL REFERENCES rides (id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    sequence BIGINT NOT NULL,
    -- The body every attempt sends, byte for byte.
    body BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (ride_id, sequence)
);
CREATE INDEX webhook_events_created_at ON webhook_events (created_at);

CREATE TABLE webhook_deliveries (
    id BIGSERIAL PRIMARY KEY,
    endpoint_id BIGINT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id TEXT NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- A lease, so that no row lock is held while the receiver answers.
    locked_until TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);

CREATE TABLE webhook_attempts (
    id BIGSERIAL PRIMARY KEY,
    delivery_id BIGINT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempted_at TIMESTAMPTZ NOT NULL,
    -- The receiver's status, or why there was none.
    http_status SMALLINT,
    error TEXT CHECK (error IS NULL OR char_length(error) <= 500),
    duration_ms INTEGER NOT NULL CHECK (duration_ms >= 0)
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);

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

-- Stages event `type` of `ride` (its sequence already counted), with `extra`
-- beside the ride in `data`, and one delivery to each enabled destination of
-- the ride's user subscribed to it now.
CREATE FUNCTION ridepay_stage_event(ride rides, type text, extra jsonb) RETURNS void
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

-- A ride's status (or its tip) changed: the event it means, if any, counted
-- in the ride's sequence and staged. A ride given back its captured status
-- by a refund that failed is reported by `refund.failed`.
CREATE FUNCTION ridepay_ride_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    type text;
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status
       AND NEW.status IN ('authorized', 'requires_action', 'captured', 'canceled', 'expired',
                          'payment_declined', 'payment_failed', 'disputed')
       AND NOT (OLD.status = 'refunded' AND NEW.status = 'captured') THEN
        type := 'ride.' || NEW.status;
    ELSIF OLD.tip_cents = 0 AND NEW.tip_cents > 0 THEN
        type := 'ride.tipped';
    ELSE
        RETURN NEW;
    END IF;
    NEW.event_sequence := OLD.event_sequence + 1;
    PERFORM ridepay_stage_event(NEW, type, '{}'::jsonb);
    RETURN NEW;
END
$$;

CREATE TRIGGER rides_stage_events BEFORE UPDATE OF status, tip_cents ON rides
    FOR EACH ROW EXECUTE FUNCTION ridepay_ride_changed();

-- A refund (or part of one) settled: `refund.succeeded` or `refund.failed`,
-- with the ride as the transaction leaves it (the trigger runs at commit,
-- after the ride's refunded amount has followed). Each part of a split
-- refund reports itself, under its refund's id.
CREATE FUNCTION ridepay_refund_changed() RETURNS trigger
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

CREATE CONSTRAINT TRIGGER refunds_stage_events AFTER INSERT OR UPDATE OF status ON refunds
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ridepay_refund_changed();
