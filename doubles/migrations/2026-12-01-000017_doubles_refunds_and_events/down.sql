DROP TABLE simulated_events;
DROP INDEX simulated_payment_intents_due;
DROP INDEX simulated_refunds_settling;
DROP INDEX simulated_refunds_payment_intent;
DELETE FROM simulated_refunds WHERE payment_intent IS NOT NULL OR status <> 'succeeded';
ALTER TABLE simulated_refunds DROP CONSTRAINT simulated_refunds_status_check;
ALTER TABLE simulated_refunds ADD CONSTRAINT simulated_refunds_status_check
    CHECK (status IN ('succeeded'));
ALTER TABLE simulated_refunds
    DROP CONSTRAINT simulated_refunds_of_a_payment,
    DROP COLUMN settles_as,
    DROP COLUMN settles_at,
    DROP COLUMN gateway,
    DROP COLUMN payment_intent,
    ALTER COLUMN charge_id SET NOT NULL,
    ADD CONSTRAINT simulated_refunds_charge_id_fkey
        FOREIGN KEY (charge_id) REFERENCES simulated_charges (id);
ALTER TABLE simulated_payment_intents
    DROP COLUMN settles_at,
    DROP COLUMN disputed,
    DROP COLUMN gateway;
