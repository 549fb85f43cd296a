-- The sender's claim walks the destinations with pending deliveries one at
-- a time and reads each one's due deliveries in order, so it needs them by
-- destination; nothing reads pending deliveries by time alone.
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint_id, next_attempt_at, id)
    WHERE status = 'pending';

-- A user's test events of the last hour, counted against their quota.
CREATE INDEX webhook_events_tests ON webhook_events (user_id, created_at)
    WHERE type = 'webhook_endpoint.test';
