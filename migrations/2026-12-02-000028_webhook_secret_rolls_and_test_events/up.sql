-- A destination's secret rolled: the one before still signs, beside the
-- new, until it expires. And a test event, sent to one destination: no ride.
INSERT INTO idempotent_endpoints (name) VALUES
    ('webhook_endpoints.roll_secret'), ('webhook_endpoints.test');
INSERT INTO recovery_points (endpoint, point) VALUES
    ('webhook_endpoints.roll_secret', 'started'),
    ('webhook_endpoints.roll_secret', 'rolled'),
    ('webhook_endpoints.roll_secret', 'finished'),
    ('webhook_endpoints.test', 'started'),
    ('webhook_endpoints.test', 'staged'),
    ('webhook_endpoints.test', 'finished');

ALTER TABLE webhook_endpoints ADD COLUMN previous_secret TEXT
    CHECK (previous_secret IS NULL OR previous_secret LIKE 'whsec\_%');
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at TIMESTAMPTZ;

ALTER TABLE webhook_events ALTER COLUMN ride_id DROP NOT NULL;
ALTER TABLE webhook_events ALTER COLUMN sequence DROP NOT NULL;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_ride_or_test CHECK (
    (ride_id IS NOT NULL AND sequence IS NOT NULL) OR type = 'webhook_endpoint.test'
);
