-- Stripe webhook events, each recorded once under its id, in the transaction
-- that applies it: a redelivery finds the row and changes nothing.
CREATE TABLE stripe_events (
    id TEXT PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 255),
    event_type TEXT NOT NULL,
    -- The event's own `created`, to tell an older event from a newer one.
    event_created TIMESTAMPTZ NOT NULL,
    charge_id TEXT,
    -- applied, ignored, superseded
    result TEXT NOT NULL CHECK (result IN ('applied', 'ignored', 'superseded')),
    received_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX stripe_events_charge_id_created ON stripe_events (charge_id, event_created)
    WHERE charge_id IS NOT NULL;
