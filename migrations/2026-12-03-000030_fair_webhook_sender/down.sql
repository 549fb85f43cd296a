DROP INDEX webhook_events_tests;
DROP INDEX webhook_deliveries_pending;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
