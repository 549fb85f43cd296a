-- Rides are paid through PaymentIntents: a hold when the ride is requested
-- (or a charge at once, capture_method automatic), captured when it ends.
-- Rides paid before, through the Charges API, are carried over: `charged`
-- becomes `captured`, their charge stays the one refunds go to.

ALTER TABLE rides RENAME COLUMN payment_source TO payment_method;
ALTER TABLE rides
    -- Legacy rides were charged at once.
    ADD COLUMN capture_method TEXT NOT NULL DEFAULT 'automatic'
        CHECK (capture_method IN ('manual', 'automatic')),
    -- The saved card's customer, sent with its payment method.
    ADD COLUMN customer TEXT CHECK (customer IS NULL OR char_length(customer) BETWEEN 1 AND 255),
    -- Where the rider's browser returns after authenticating: fixed when the
    -- ride is created, so every resend of the call carries the same one.
    ADD COLUMN return_url TEXT CHECK (return_url IS NULL OR char_length(return_url) BETWEEN 1 AND 2048),
    -- The final guard against recording one PaymentIntent on two rides.
    ADD COLUMN payment_intent_id TEXT UNIQUE
        CHECK (payment_intent_id IS NULL OR char_length(payment_intent_id) BETWEEN 1 AND 255),
    -- For the return page, which checks it; never logged.
    ADD COLUMN client_secret TEXT
        CHECK (client_secret IS NULL OR char_length(client_secret) BETWEEN 1 AND 512),
    -- The gateway's next action while the ride is requires_action.
    ADD COLUMN next_action JSONB,
    ADD COLUMN amount_authorized_cents BIGINT NOT NULL DEFAULT 0
        CHECK (amount_authorized_cents >= 0),
    ADD COLUMN amount_captured_cents BIGINT NOT NULL DEFAULT 0
        CHECK (amount_captured_cents >= 0);
ALTER TABLE rides ALTER COLUMN capture_method DROP DEFAULT;

ALTER TABLE rides DROP CONSTRAINT rides_charged_has_charge_id;
ALTER TABLE rides DROP CONSTRAINT rides_status_check;
ALTER TABLE rides DROP CONSTRAINT rides_check;
UPDATE rides SET status = 'captured' WHERE status = 'charged';
UPDATE rides
SET amount_authorized_cents = amount_cents, amount_captured_cents = amount_cents
WHERE status IN ('captured', 'refunded', 'disputed');
ALTER TABLE rides ADD CONSTRAINT rides_status_check CHECK (status IN (
    'pending', 'requires_action', 'processing', 'authorized', 'captured', 'canceled',
    'expired', 'payment_declined', 'payment_failed', 'refunded', 'disputed'
));
-- Only what was captured can be refunded.
ALTER TABLE rides ADD CONSTRAINT rides_refunds_within_capture
    CHECK (amount_refunded_cents BETWEEN 0 AND amount_captured_cents);
ALTER TABLE rides ADD CONSTRAINT rides_paid_has_payment CHECK (
    status IN ('pending', 'payment_failed') OR payment_intent_id IS NOT NULL OR charge_id IS NOT NULL
);

-- Keys of POST /api/rides whose stored request names the old
-- `payment_source`: the request as this version reads it (`payment_source`
-- gone, charged at once as then). One still at ride_created may have been
-- charged through the Charges API, which this version no longer calls: it
-- waits for an operator, who looks the charge up by its metadata.
UPDATE idempotency_keys
SET request_params = (request_params - 'payment_source')
        || '{"capture_method": "automatic", "payment_method": null}'::jsonb
WHERE endpoint = 'rides.create' AND request_params ? 'payment_source';
UPDATE idempotency_keys
SET needs_attention_at = now(),
    last_error = 'requested through the Charges API before PaymentIntents: find its charge '
        || 'by metadata[idempotency_key_id] and settle the ride by hand'
WHERE endpoint = 'rides.create' AND recovery_point = 'ride_created'
    AND needs_attention_at IS NULL
    AND EXISTS (
        SELECT 1 FROM rides
        WHERE rides.idempotency_key_id = idempotency_keys.id AND rides.status = 'pending'
            AND rides.payment_method !~ '^pm_'
    );

-- Refunds carry the gateway's status through: pending until it settles,
-- and failed or canceled (even after succeeding) gives the amount back.
ALTER TABLE refunds DROP CONSTRAINT refunds_status_check;
ALTER TABLE refunds ADD CONSTRAINT refunds_status_check
    CHECK (status IN ('pending', 'succeeded', 'failed', 'canceled'));

-- Events name the PaymentIntent (or a legacy charge) they are about.
ALTER TABLE stripe_events RENAME COLUMN charge_id TO subject;
ALTER INDEX stripe_events_charge_id_created RENAME TO stripe_events_subject_created;
