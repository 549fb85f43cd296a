ALTER INDEX stripe_events_subject_created RENAME TO stripe_events_charge_id_created;
ALTER TABLE stripe_events RENAME COLUMN subject TO charge_id;
UPDATE refunds SET status = 'failed' WHERE status = 'canceled';
ALTER TABLE refunds DROP CONSTRAINT refunds_status_check;
ALTER TABLE refunds ADD CONSTRAINT refunds_status_check
    CHECK (status IN ('pending', 'succeeded', 'failed'));
ALTER TABLE rides DROP CONSTRAINT rides_paid_has_payment;
ALTER TABLE rides DROP CONSTRAINT rides_refunds_within_capture;
ALTER TABLE rides DROP CONSTRAINT rides_status_check;
UPDATE rides SET status = 'charged' WHERE status = 'captured';
UPDATE rides SET status = 'payment_failed'
WHERE status NOT IN ('pending', 'charged', 'payment_declined', 'payment_failed', 'refunded', 'disputed');
ALTER TABLE rides ADD CONSTRAINT rides_status_check CHECK (status IN (
    'pending', 'charged', 'payment_declined', 'payment_failed', 'refunded', 'disputed'
));
ALTER TABLE rides ADD CONSTRAINT rides_check CHECK (amount_refunded_cents BETWEEN 0 AND amount_cents);
ALTER TABLE rides
    DROP COLUMN capture_method,
    DROP COLUMN customer,
    DROP COLUMN return_url,
    DROP COLUMN payment_intent_id,
    DROP COLUMN client_secret,
    DROP COLUMN next_action,
    DROP COLUMN amount_authorized_cents,
    DROP COLUMN amount_captured_cents;
ALTER TABLE rides RENAME COLUMN payment_method TO payment_source;
ALTER TABLE rides ADD CONSTRAINT rides_charged_has_charge_id CHECK (
    status NOT IN ('charged', 'refunded', 'disputed') OR charge_id IS NOT NULL
);
