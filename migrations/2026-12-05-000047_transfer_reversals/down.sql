-- Transfers owed and refunds posted as before reversals.
DROP TRIGGER transfer_reversals_post_to_ledger ON transfer_reversals;
DROP FUNCTION ridepay_ledger_reversal_made();
CREATE OR REPLACE FUNCTION ridepay_ledger_refund_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    into_gateway bigint := CASE WHEN NEW.status IN ('pending', 'succeeded')
                                THEN -NEW.amount_cents ELSE NEW.amount_cents END;
    refunded bigint;
    refunded_intent text;
    charge_id text;
    owed transfers;
    payable text;
    bps integer;
    taken bigint;
    codes text[];
    amounts bigint[];
BEGIN
    SELECT coalesce(NEW.payment_intent_id, ride.payment_intent_id) INTO refunded_intent
    FROM rides AS ride WHERE ride.id = NEW.ride_id;
    SELECT charge.id INTO charge_id FROM charges AS charge
    WHERE charge.ride_id = NEW.ride_id
      AND ridepay_charge_intent(charge.id) IS NOT DISTINCT FROM refunded_intent;
    SELECT * INTO owed FROM transfers
    WHERE ride_id = NEW.ride_id AND source_charge = charge_id FOR UPDATE;
    IF FOUND THEN
        SELECT payable_code || ':' || NEW.currency INTO STRICT payable
        FROM drivers WHERE id = owed.driver_id;
    END IF;
    IF into_gateway > 0 THEN
        SELECT id INTO refunded FROM ledger_transactions
        WHERE source = NEW.gateway_refund_id || ':refund';
        IF refunded IS NULL THEN
            RETURN NULL;
        END IF;
        SELECT array_agg(account.code), array_agg(-entry.amount_cents),
               coalesce(sum(entry.amount_cents) FILTER (WHERE account.code = payable), 0)
            INTO codes, amounts, taken
        FROM ledger_entries AS entry JOIN ledger_accounts AS account ON account.id = entry.account_id
        WHERE entry.transaction_id = refunded;
        IF ridepay_ledger_post('refund_failed', NEW.gateway_refund_id || ':failed', NEW.ride_id,
                               refunded, codes, amounts) IS NOT NULL
           AND owed.gateway_transfer_id IS NULL AND taken > 0 THEN
            PERFORM ridepay_transfer_owes(owed, least(owed.amount_cents + taken,
                ridepay_driver_entitlement(charge_id, (SELECT commission_bps FROM ride_drivers
                                                        WHERE ride_id = NEW.ride_id))
                - owed.netted_cents));
        END IF;
        RETURN NULL;
    END IF;
    IF owed.id IS NULL THEN
        PERFORM ridepay_ledger_post('refund', NEW.gateway_refund_id || ':refund', NEW.ride_id, NULL,
            ARRAY['gateway:' || NEW.currency, 'platform:unassigned:' || NEW.currency],
            ARRAY[into_gateway, -into_gateway]);
        RETURN NULL;
    END IF;
    SELECT commission_bps INTO STRICT bps FROM ride_drivers WHERE ride_id = NEW.ride_id;
    taken := ridepay_driver_entitlement(charge_id, bps,
                 ridepay_refunded(NEW.ride_id, refunded_intent) - NEW.amount_cents)
             - ridepay_driver_entitlement(charge_id, bps);
    IF ridepay_ledger_post_nonzero('refund', NEW.gateway_refund_id || ':refund', NEW.ride_id,
           ARRAY['gateway:' || NEW.currency, payable, 'platform:commission:' || NEW.currency],
           ARRAY[into_gateway, taken, NEW.amount_cents - taken]) IS NOT NULL
       AND owed.gateway_transfer_id IS NULL THEN
        PERFORM ridepay_transfer_owes(owed, owed.amount_cents - least(taken, owed.amount_cents));
    END IF;
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION ridepay_driver_owed(charge_id text) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    charge charges;
    ride rides;
    assigned ride_drivers;
    payable text;
    entitlement bigint;
    kept bigint;
    owed bigint;
    amount bigint;
BEGIN
    SELECT * INTO STRICT charge FROM charges WHERE id = charge_id;
    SELECT * INTO STRICT ride FROM rides WHERE id = charge.ride_id;
    SELECT * INTO assigned FROM ride_drivers WHERE ride_id = ride.id;
    IF NOT FOUND
       OR EXISTS (SELECT 1 FROM transfers WHERE ride_id = ride.id AND source_charge = charge_id) THEN
        RETURN;
    END IF;
    SELECT payable_code || ':' || charge.currency INTO STRICT payable
    FROM drivers WHERE id = assigned.driver_id FOR UPDATE;
    INSERT INTO ledger_accounts (code, kind, currency)
    VALUES (payable, 'liability', charge.currency) ON CONFLICT (code) DO NOTHING;
    entitlement := ridepay_driver_entitlement(charge_id, assigned.commission_bps);
    kept := charge.amount_cents - ridepay_refunded(ride.id, ridepay_charge_intent(charge_id));
    PERFORM ridepay_ledger_post_nonzero('reallocation', charge_id || ':reallocation', ride.id,
        ARRAY['platform:unassigned:' || charge.currency, payable,
              'platform:commission:' || charge.currency],
        ARRAY[kept, -entitlement, entitlement - kept]);
    SELECT -coalesce(sum(entry.amount_cents), 0) INTO owed
    FROM ledger_entries AS entry JOIN ledger_accounts AS account ON account.id = entry.account_id
    WHERE account.code = payable;
    amount := least(entitlement, greatest(owed, 0));
    INSERT INTO transfers (ride_id, driver_id, source_charge, currency, entitled_cents,
                           amount_cents, netted_cents, status)
    VALUES (ride.id, assigned.driver_id, charge_id, charge.currency, entitlement, amount,
            entitlement - amount,
            CASE WHEN amount = 0 THEN 'netted' ELSE 'pending' END);
END
$$;
DROP FUNCTION ridepay_refund_failed_for_driver(refunds);
DROP FUNCTION ridepay_reversal_owed(transfers, refunds, bigint);
DROP FUNCTION ridepay_reversal_undone(transfer_reversals);
DROP FUNCTION ridepay_transfer_owed(bigint, bigint, text, text, bigint, bigint);
DROP FUNCTION ridepay_driver_owed_now(bigint, text);
DROP INDEX transfers_one_per_charge;
ALTER TABLE transfers DROP COLUMN reowes_reversal_id,
    ADD CONSTRAINT transfers_ride_id_source_charge_key UNIQUE (ride_id, source_charge);
DROP TABLE transfer_reversals;
