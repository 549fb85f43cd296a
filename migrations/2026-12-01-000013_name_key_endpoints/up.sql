-- Every key names the endpoint it belongs to, so workers never recognise an
-- endpoint by its path, and each endpoint's recovery points are rows of its
-- own: an endpoint's migration inserts them, and no shared CHECK is re-issued.
CREATE TABLE idempotent_endpoints (
    -- `<resource>.<action>`, stable forever: stored with every key.
    name TEXT PRIMARY KEY CHECK (name ~ '^[a-z_]+\.[a-z_]+$')
);

CREATE TABLE recovery_points (
    endpoint TEXT NOT NULL REFERENCES idempotent_endpoints (name),
    point TEXT NOT NULL CHECK (point ~ '^[a-z_]{1,64}$'),
    PRIMARY KEY (endpoint, point)
);

INSERT INTO idempotent_endpoints (name) VALUES ('rides.create'), ('refunds.create');
INSERT INTO recovery_points (endpoint, point) VALUES
    ('rides.create', 'started'),
    ('rides.create', 'ride_created'),
    ('rides.create', 'charge_completed'),
    ('rides.create', 'finished'),
    ('refunds.create', 'started'),
    ('refunds.create', 'refund_created'),
    ('refunds.create', 'refund_completed'),
    ('refunds.create', 'finished');

-- The keys written before: both endpoints are POSTs, told apart by their
-- paths for the last time. A key of neither leaves the column NULL and fails
-- the migration rather than guessing.
ALTER TABLE idempotency_keys ADD COLUMN endpoint TEXT;
UPDATE idempotency_keys SET endpoint = 'rides.create' WHERE request_path = '/api/rides';
UPDATE idempotency_keys SET endpoint = 'refunds.create'
    WHERE request_path ~ '^/api/rides/[0-9]+/refunds$';
ALTER TABLE idempotency_keys ALTER COLUMN endpoint SET NOT NULL;

ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_recovery_point_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_recovery_point_fkey
    FOREIGN KEY (endpoint, recovery_point) REFERENCES recovery_points (endpoint, point);
