DELETE FROM recovery_points WHERE endpoint = 'webhook_deliveries.retry';
DELETE FROM idempotent_endpoints WHERE name = 'webhook_deliveries.retry';
