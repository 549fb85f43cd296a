-- The refunds' posting as the ledger made it.
CREATE OR REPLACE FUNCTION ridepay_ledger_refund_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    into_gateway bigint := CASE WHEN NEW.status IN ('pending', 'succeeded')
                                THEN -NEW.amount_cents ELSE NEW.amount_cents END;
    refunded bigint;
BEGIN
    IF into_gateway > 0 THEN
        SELECT id INTO refunded FROM ledger_transactions
        WHERE source = NEW.gateway_refund_id || ':refund';
        IF refunded IS NULL THEN
            RETURN NULL;
        END IF;
    END IF;
    PERFORM ridepay_ledger_post(
        CASE WHEN refunded IS NULL THEN 'refund' ELSE 'refund_failed' END,
        NEW.gateway_refund_id || CASE WHEN refunded IS NULL THEN ':refund' ELSE ':failed' END,
        NEW.ride_id, refunded,
        ARRAY['gateway:' || NEW.currency, 'platform:unassigned:' || NEW.currency],
        ARRAY[into_gateway, -into_gateway]);
    RETURN NULL;
END
$$;
DROP FUNCTION IF EXISTS ridepay_transfer_owes(transfers, bigint);
DROP TRIGGER charges_transfer_owed ON charges;
DROP FUNCTION ridepay_charge_owed_to_driver();
DROP FUNCTION ridepay_driver_owed(text);
DROP FUNCTION ridepay_ledger_post_nonzero(text, text, bigint, text[], bigint[]);
DROP FUNCTION ridepay_driver_entitlement(text, integer);
DROP FUNCTION ridepay_driver_entitlement(text, integer, bigint);
DROP FUNCTION ridepay_charge_intent(text);
DROP FUNCTION ridepay_refunded(bigint, text);
DROP TABLE transfers;
ALTER TABLE charges DROP COLUMN payment_intent_id;
DROP TABLE ride_drivers;
DELETE FROM recovery_points WHERE endpoint = 'rides.assign_driver';
DELETE FROM idempotent_endpoints WHERE name = 'rides.assign_driver';
