-- POST /api/webhook_endpoints/{id}/deliveries/{delivery_id}/retry: a
-- delivery sent again by hand, an idempotent endpoint of its own.
INSERT INTO idempotent_endpoints (name) VALUES ('webhook_deliveries.retry');
INSERT INTO recovery_points (endpoint, point) VALUES
    ('webhook_deliveries.retry', 'started'),
    ('webhook_deliveries.retry', 'requeued'),
    ('webhook_deliveries.retry', 'finished');
