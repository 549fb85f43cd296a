DROP TABLE simulated_intent_calls;
DROP TABLE simulated_payment_intents;
