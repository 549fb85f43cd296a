DROP TABLE refunds;
-- Keys of the refunds endpoint cannot outlive its recovery points.
DELETE FROM idempotency_keys WHERE recovery_point IN ('refund_created', 'refund_completed');
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_recovery_point_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_recovery_point_check
    CHECK (recovery_point IN ('started', 'ride_created', 'charge_completed', 'finished'));
