-- An event carries the ride (and a refund) as the API answers them, rendered
-- by the one renderer of the answers, ridepay's own: the trigger stages, in
-- the transaction of the change, the rows as the change leaves them
-- (`snapshot`), and the sender renders the event's body from them. A test
-- event, about no ride, is staged with its body. Events staged before
-- this keep the body they were staged with.
ALTER TABLE webhook_events ADD COLUMN snapshot JSONB;
ALTER TABLE webhook_events ALTER COLUMN body DROP NOT NULL;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_body_or_snapshot
    CHECK ((body IS NULL) <> (snapshot IS NULL));

-- Records event `type` of `ride` (its sequence already counted), with
-- `extra` (a refund) beside the ride in its snapshot: its id.
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
    PERFORM ridepay_stage_event(ride, 'refund.' || NEW.status,
                                jsonb_build_object('refund', to_jsonb(NEW)));
    RETURN NEW;
END
$$;

DROP FUNCTION ridepay_ride_json(rides);
DROP FUNCTION ridepay_instant(timestamptz);
