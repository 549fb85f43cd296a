-- The rest of a ride's life: POST /api/rides/{id}/complete captures the
-- final fare, POST /api/rides/{id}/cancel releases the hold (or captures a
-- fee). Each is an idempotent endpoint with recovery points of its own.
INSERT INTO idempotent_endpoints (name) VALUES ('rides.complete'), ('rides.cancel');
INSERT INTO recovery_points (endpoint, point) VALUES
    ('rides.complete', 'started'),
    ('rides.complete', 'completion_started'),
    ('rides.complete', 'hold_covers'),
    ('rides.complete', 'finished'),
    ('rides.cancel', 'started'),
    ('rides.cancel', 'cancellation_started'),
    ('rides.cancel', 'finished');

-- The key completing or cancelling the ride, from its first phase until it
-- records what the gateway did: one at a time per ride, and the gateway's
-- events about the ride's PaymentIntent wait for it (a cancellation fee's
-- `payment_intent.succeeded` must not make the ride `captured`).
ALTER TABLE rides ADD COLUMN settling_key_id BIGINT
    REFERENCES idempotency_keys (id) ON DELETE SET NULL;
