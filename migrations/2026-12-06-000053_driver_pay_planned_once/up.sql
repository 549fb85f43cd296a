-- What a ride's driver is owed is computed by PL/pgSQL functions, whose
-- statements' plans a session keeps: a SQL function called from PL/pgSQL
-- is planned again at every call, which cost an assigned completion
-- about 2 ms of planning. (Still volatile: called by triggers, they see
-- what the statement that fired them changed.)

CREATE OR REPLACE FUNCTION ridepay_charge_intent(charge_id text) RETURNS text
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT coalesce(charge.payment_intent_id, ride.payment_intent_id)
            FROM charges AS charge JOIN rides AS ride ON ride.id = charge.ride_id
            WHERE charge.id = ridepay_charge_intent.charge_id);
END
$$;

CREATE OR REPLACE FUNCTION ridepay_refunded(ride bigint, intent text) RETURNS bigint
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT coalesce(sum(refund.amount_cents), 0)
            FROM refunds AS refund JOIN rides ON rides.id = refund.ride_id
            WHERE refund.ride_id = ridepay_refunded.ride
              AND refund.status IN ('pending', 'succeeded')
              AND coalesce(refund.payment_intent_id, rides.payment_intent_id)
                  IS NOT DISTINCT FROM ridepay_refunded.intent);
END
$$;

CREATE OR REPLACE FUNCTION ridepay_driver_entitlement(charge_id text, bps integer) RETURNS bigint
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN ridepay_driver_entitlement(charge_id, bps,
        (SELECT ridepay_refunded(charge.ride_id, ridepay_charge_intent(charge.id))
         FROM charges AS charge WHERE charge.id = ridepay_driver_entitlement.charge_id));
END
$$;

-- Summed from the driver's payable account's entries alone: the account
-- found first, by its code, then its entries read through
-- `ledger_entries_account`. Joined on the code instead, the planner hashed
-- every entry of the ledger for each transfer owed.
CREATE OR REPLACE FUNCTION ridepay_driver_owed_now(driver bigint, currency text) RETURNS bigint
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN coalesce((SELECT -sum(entry.amount_cents)
                     FROM ledger_entries AS entry
                     WHERE entry.account_id = (
                         SELECT account.id FROM ledger_accounts AS account
                         WHERE account.code = (SELECT payee.payable_code FROM drivers AS payee
                                               WHERE payee.id = ridepay_driver_owed_now.driver)
                                              || ':' || ridepay_driver_owed_now.currency)), 0)
           + coalesce((SELECT sum(owed.amount_cents) FROM transfer_reversals AS owed
                       WHERE owed.driver_id = ridepay_driver_owed_now.driver
                         AND owed.status = 'pending'
                         AND owed.currency = ridepay_driver_owed_now.currency), 0);
END
$$;
