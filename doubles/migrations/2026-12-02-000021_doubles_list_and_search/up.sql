-- Listing by `created[gte]`, newest first, as Stripe's list does, which
-- reconciliation reads page by page.
CREATE INDEX simulated_payment_intents_listed
    ON simulated_payment_intents (gateway, created_at DESC, id DESC);
-- Forgetting keys by age, as Stripe does after 24 hours.
CREATE INDEX simulated_intent_calls_created_at ON simulated_intent_calls (created_at);
