DROP TABLE stripe_events;
