ALTER TABLE rides DROP COLUMN settling_key_id;
DELETE FROM idempotency_keys WHERE endpoint IN ('rides.complete', 'rides.cancel');
DELETE FROM recovery_points WHERE endpoint IN ('rides.complete', 'rides.cancel');
DELETE FROM idempotent_endpoints WHERE name IN ('rides.complete', 'rides.cancel');
