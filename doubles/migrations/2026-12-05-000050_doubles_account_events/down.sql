DELETE FROM simulated_events WHERE object_kind = 'account';
ALTER TABLE simulated_events DROP CONSTRAINT simulated_events_object_kind_check;
ALTER TABLE simulated_events ADD CONSTRAINT simulated_events_object_kind_check
    CHECK (object_kind IN ('payment_intent', 'refund', 'dispute'));
