CREATE OR REPLACE FUNCTION ridepay_charge_intent(charge_id text) RETURNS text
    LANGUAGE sql
    RETURN (SELECT coalesce(charge.payment_intent_id, ride.payment_intent_id)
            FROM charges AS charge JOIN rides AS ride ON ride.id = charge.ride_id
            WHERE charge.id = ridepay_charge_intent.charge_id);

CREATE OR REPLACE FUNCTION ridepay_refunded(ride bigint, intent text) RETURNS bigint
    LANGUAGE sql
    RETURN (SELECT coalesce(sum(refund.amount_cents), 0)
            FROM refunds AS refund JOIN rides ON rides.id = refund.ride_id
            WHERE refund.ride_id = ridepay_refunded.ride
              AND refund.status IN ('pending', 'succeeded')
              AND coalesce(refund.payment_intent_id, rides.payment_intent_id)
                  IS NOT DISTINCT FROM ridepay_refunded.intent);

CREATE OR REPLACE FUNCTION ridepay_driver_entitlement(charge_id text, bps integer) RETURNS bigint
    LANGUAGE sql
    RETURN ridepay_driver_entitlement(charge_id, bps,
        (SELECT ridepay_refunded(charge.ride_id, ridepay_charge_intent(charge.id))
         FROM charges AS charge WHERE charge.id = ridepay_driver_entitlement.charge_id));

CREATE OR REPLACE FUNCTION ridepay_driver_owed_now(driver bigint, currency text) RETURNS bigint
    LANGUAGE sql
    RETURN (SELECT coalesce((SELECT -sum(entry.amount_cents)
                             FROM ledger_entries AS entry
                             JOIN ledger_accounts AS account ON account.id = entry.account_id
                             WHERE account.code = payee.payable_code || ':'
                                                  || ridepay_driver_owed_now.currency), 0)
                   + coalesce((SELECT sum(owed.amount_cents) FROM transfer_reversals AS owed
                               WHERE owed.driver_id = payee.id AND owed.status = 'pending'
                                 AND owed.currency = ridepay_driver_owed_now.currency), 0)
            FROM drivers AS payee WHERE payee.id = ridepay_driver_owed_now.driver);
