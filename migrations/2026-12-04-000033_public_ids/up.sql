-- Public ids (`src/public_ids.rs`): every id the API hands out is a prefix
-- and 18 bytes, stored here as the bytes. A row a request makes gets an id
-- derived from the request under the installation's secret (by the
-- service); other rows get random ones. The integer keys stay for joins,
-- and rows shown under an integer before keep it as `legacy_id`, which a
-- path may still name (only for the row's own user).

-- Made once, never sent anywhere: without it no one can tell a request's
-- ids from what the gateway's metadata says of the request.
ALTER TABLE installation ADD COLUMN id_secret BYTEA;
UPDATE installation
    SET id_secret = sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));
ALTER TABLE installation ALTER COLUMN id_secret SET NOT NULL,
    ADD CONSTRAINT installation_id_secret_length CHECK (octet_length(id_secret) = 32);

-- 18 random bytes, for a row no request makes.
CREATE FUNCTION ridepay_random_id() RETURNS bytea
    LANGUAGE sql VOLATILE
    RETURN substring(sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()))
                     FROM 1 FOR 18);

-- Rows made before have no request to derive from: random ids.
ALTER TABLE rides ADD COLUMN public_id BYTEA, ADD COLUMN legacy_id BIGINT;
UPDATE rides SET public_id = ridepay_random_id(), legacy_id = id;
ALTER TABLE rides ALTER COLUMN public_id SET NOT NULL,
    ADD CONSTRAINT rides_public_id_length CHECK (octet_length(public_id) = 18);
CREATE UNIQUE INDEX rides_public_id ON rides (public_id);
CREATE UNIQUE INDEX rides_legacy_id ON rides (legacy_id) WHERE legacy_id IS NOT NULL;

-- A refund's second part carries its refund's id: one refund, one id.
ALTER TABLE refunds ADD COLUMN public_id BYTEA, ADD COLUMN legacy_id BIGINT;
UPDATE refunds SET public_id = ridepay_random_id(), legacy_id = id WHERE part_of IS NULL;
UPDATE refunds AS second SET public_id = first.public_id
    FROM refunds AS first WHERE second.part_of = first.id;
ALTER TABLE refunds ALTER COLUMN public_id SET NOT NULL,
    ADD CONSTRAINT refunds_public_id_length CHECK (octet_length(public_id) = 18);
CREATE UNIQUE INDEX refunds_public_id ON refunds (public_id) WHERE part_of IS NULL;
CREATE UNIQUE INDEX refunds_legacy_id ON refunds (legacy_id) WHERE legacy_id IS NOT NULL;

-- The installation's own destination of receipts is made by no request.
ALTER TABLE webhook_endpoints
    ADD COLUMN public_id BYTEA NOT NULL DEFAULT ridepay_random_id()
        CHECK (octet_length(public_id) = 18),
    ADD COLUMN legacy_id BIGINT;
UPDATE webhook_endpoints SET legacy_id = id WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX webhook_endpoints_public_id ON webhook_endpoints (public_id);
CREATE UNIQUE INDEX webhook_endpoints_legacy_id ON webhook_endpoints (legacy_id)
    WHERE legacy_id IS NOT NULL;

-- Deliveries are made by no request, and were only ever listed.
ALTER TABLE webhook_deliveries
    ADD COLUMN public_id BYTEA NOT NULL DEFAULT ridepay_random_id()
        CHECK (octet_length(public_id) = 18);
CREATE UNIQUE INDEX webhook_deliveries_public_id ON webhook_deliveries (public_id);

-- Events staged before, and rendered when sent, show the ids their rows
-- have now.
UPDATE webhook_events AS event
    SET snapshot = jsonb_set(event.snapshot, '{ride,public_id}', to_jsonb(ride.public_id))
    FROM rides AS ride
    WHERE event.snapshot IS NOT NULL AND ride.id = event.ride_id;
UPDATE webhook_events AS event
    SET snapshot = jsonb_set(event.snapshot, '{refund,public_id}', to_jsonb(refund.public_id))
    FROM refunds AS refund
    WHERE event.snapshot ? 'refund' AND refund.id = (event.snapshot -> 'refund' ->> 'id')::bigint;
