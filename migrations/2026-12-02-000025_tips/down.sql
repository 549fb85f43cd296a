DROP INDEX refunds_one_part_each;
ALTER TABLE refunds DROP COLUMN payment_intent_id;
ALTER TABLE refunds DROP COLUMN part_of;
ALTER TABLE rides DROP CONSTRAINT rides_tip_intent_has_tip;
ALTER TABLE rides DROP COLUMN tip_payment_intent_id;
ALTER TABLE rides DROP COLUMN tip_cents;
DELETE FROM recovery_points WHERE endpoint = 'rides.tip'
    OR (endpoint = 'refunds.create' AND point = 'fare_part_refunded');
DELETE FROM idempotent_endpoints WHERE name = 'rides.tip';
