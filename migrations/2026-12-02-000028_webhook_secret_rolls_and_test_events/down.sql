DELETE FROM webhook_events WHERE ride_id IS NULL;
ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_ride_or_test;
ALTER TABLE webhook_events ALTER COLUMN sequence SET NOT NULL;
ALTER TABLE webhook_events ALTER COLUMN ride_id SET NOT NULL;
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_expires_at;
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret;
DELETE FROM recovery_points
    WHERE endpoint IN ('webhook_endpoints.roll_secret', 'webhook_endpoints.test');
DELETE FROM idempotent_endpoints
    WHERE name IN ('webhook_endpoints.roll_secret', 'webhook_endpoints.test');
