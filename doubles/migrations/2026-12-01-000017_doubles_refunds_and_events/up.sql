-- The gateway doubles' refunds of PaymentIntents (beside those of the
-- charges made before them), refunds that settle later, and the events both
-- doubles send: the simulated gateway to ridepay in-process, the fake Stripe
-- over HTTP, signed.

-- Which double a record belongs to, so each sends only its own events.
ALTER TABLE simulated_payment_intents
    ADD COLUMN gateway TEXT NOT NULL DEFAULT 'simulated' CHECK (gateway IN ('simulated', 'fake')),
    ADD COLUMN disputed BOOLEAN NOT NULL DEFAULT false,
    -- When a `processing` intent settles.
    ADD COLUMN settles_at TIMESTAMPTZ;

-- A refund of an intent names the intent's charge too, as Stripe's do; the
-- doubles keep no charge rows for intents.
ALTER TABLE simulated_refunds DROP CONSTRAINT simulated_refunds_charge_id_fkey;
ALTER TABLE simulated_refunds
    ALTER COLUMN charge_id DROP NOT NULL,
    ADD COLUMN payment_intent TEXT REFERENCES simulated_payment_intents (id),
    ADD COLUMN gateway TEXT NOT NULL DEFAULT 'simulated' CHECK (gateway IN ('simulated', 'fake')),
    -- A refund that changes status later: when, and to what.
    ADD COLUMN settles_at TIMESTAMPTZ,
    ADD COLUMN settles_as TEXT CHECK (settles_as IN ('succeeded', 'failed')),
    ADD CONSTRAINT simulated_refunds_of_a_payment
        CHECK (payment_intent IS NOT NULL OR charge_id IS NOT NULL);
ALTER TABLE simulated_refunds DROP CONSTRAINT simulated_refunds_status_check;
ALTER TABLE simulated_refunds ADD CONSTRAINT simulated_refunds_status_check
    CHECK (status IN ('pending', 'succeeded', 'failed', 'canceled'));
CREATE INDEX simulated_refunds_payment_intent ON simulated_refunds (payment_intent);

-- What the doubles' clock still has to do.
CREATE INDEX simulated_refunds_settling ON simulated_refunds (settles_at)
    WHERE settles_at IS NOT NULL;
CREATE INDEX simulated_payment_intents_due ON simulated_payment_intents (authorization_expires_at)
    WHERE status = 'requires_capture';

-- Events, recorded in the transaction of the change they announce and sent
-- at least once: a sender takes a batch for a while (`sending_until`), and
-- marks each sent.
CREATE TABLE simulated_events (
    id TEXT PRIMARY KEY,
    -- The order the changes were made in, within a transaction too.
    seq BIGSERIAL NOT NULL UNIQUE,
    gateway TEXT NOT NULL CHECK (gateway IN ('simulated', 'fake')),
    event_type TEXT NOT NULL,
    -- The object the event is about (pi_..., re_..., or the dispute's
    -- PaymentIntent), shown as it is when the event is sent.
    object_kind TEXT NOT NULL CHECK (object_kind IN ('payment_intent', 'refund', 'dispute')),
    object_id TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    sending_until TIMESTAMPTZ,
    sent_at TIMESTAMPTZ
);

CREATE INDEX simulated_events_unsent ON simulated_events (gateway, seq)
    WHERE sent_at IS NULL;
