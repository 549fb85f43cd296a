-- Refunds take the driver's share back (docs/RELIABILITY.md "Drivers'
-- pay"). A refund part of a charge whose transfer was made owes a
-- reversal of that transfer, recorded in the transaction that posts the
-- refund: the change in the driver's entitlement, at most what the
-- transfer has left. The transfer worker makes it; what it cannot take
-- (the gateway refused it: `balance_insufficient`, the driver's money is
-- not available yet) stays as the driver's debt, which the next transfer
-- nets. A refund that fails after its reversal was made owes the driver a
-- new transfer of what the reversal took, from the same charge.

CREATE TABLE transfer_reversals (
    id BIGSERIAL PRIMARY KEY,
    transfer_id BIGINT NOT NULL REFERENCES transfers (id),
    -- The refund part that owes it: one reversal per part.
    refund_id BIGINT NOT NULL UNIQUE REFERENCES refunds (id),
    driver_id BIGINT NOT NULL REFERENCES drivers (id),
    currency TEXT NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    -- `pending`: owed, not made yet; `reversed`: made at the gateway;
    -- `failed`: refused, its amount left as the driver's debt; `canceled`:
    -- its refund failed before it was made.
    status TEXT NOT NULL CHECK (status IN ('pending', 'reversed', 'failed', 'canceled')),
    failure_reason TEXT CHECK (char_length(failure_reason) <= 500),
    gateway_reversal_id TEXT UNIQUE CHECK (char_length(gateway_reversal_id) BETWEEN 1 AND 255),
    -- As transfers are made: the key's generation, the claim and its fence.
    generation SMALLINT NOT NULL DEFAULT 0,
    claimed_until TIMESTAMPTZ,
    claim_epoch BIGINT NOT NULL DEFAULT 0,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((status = 'reversed') = (gateway_reversal_id IS NOT NULL))
);
CREATE INDEX transfer_reversals_to_make ON transfer_reversals (id) WHERE status = 'pending';
CREATE INDEX transfer_reversals_owed_by ON transfer_reversals (driver_id) WHERE status = 'pending';
CREATE INDEX transfer_reversals_transfer ON transfer_reversals (transfer_id);

-- A transfer is owed once per ride and source charge, and once more for
-- each reversal whose refund failed after it was made.
ALTER TABLE transfers
    ADD COLUMN reowes_reversal_id BIGINT UNIQUE REFERENCES transfer_reversals (id),
    DROP CONSTRAINT transfers_ride_id_source_charge_key;
CREATE UNIQUE INDEX transfers_one_per_charge ON transfers (ride_id, source_charge)
    WHERE reowes_reversal_id IS NULL;

-- What a transfer to the driver may carry now in `currency`: what the
-- driver's payable owes them, counting as theirs again what a reversal
-- not made yet will take back (the refund that owes it already debited
-- the payable). One statement, so that it sees a reversal made and its
-- posting together. The caller holds the driver's row lock.
CREATE FUNCTION ridepay_driver_owed_now(driver bigint, currency text) RETURNS bigint
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

-- A transfer of `entitled` owed to a ride's driver from `charge_id`, its
-- amount fixed now under the driver's row lock (after the ride's):
-- never more than the ledger owes them, the rest `netted`.
CREATE FUNCTION ridepay_transfer_owed(ride bigint, driver bigint, charge_id text, currency text,
                                      entitled bigint, reowes bigint) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    amount bigint;
BEGIN
    PERFORM FROM drivers WHERE id = driver FOR UPDATE;
    amount := least(entitled, greatest(ridepay_driver_owed_now(driver, currency), 0));
    INSERT INTO transfers (ride_id, driver_id, source_charge, currency, entitled_cents,
                           amount_cents, netted_cents, status, reowes_reversal_id)
    VALUES (ride, driver, charge_id, currency, entitled, amount, entitled - amount,
            CASE WHEN amount = 0 THEN 'netted' ELSE 'pending' END, reowes);
END
$$;

-- As before, with the transfer's amount fixed by `ridepay_transfer_owed`.
CREATE OR REPLACE FUNCTION ridepay_driver_owed(charge_id text) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    charge charges;
    assigned ride_drivers;
    payable text;
    entitlement bigint;
    kept bigint;
BEGIN
    SELECT * INTO STRICT charge FROM charges WHERE id = charge_id;
    SELECT * INTO assigned FROM ride_drivers WHERE ride_id = charge.ride_id;
    IF NOT FOUND
       OR EXISTS (SELECT 1 FROM transfers
                  WHERE ride_id = charge.ride_id AND source_charge = charge_id) THEN
        RETURN;
    END IF;
    SELECT payable_code || ':' || charge.currency INTO STRICT payable
    FROM drivers WHERE id = assigned.driver_id FOR UPDATE;
    INSERT INTO ledger_accounts (code, kind, currency)
    VALUES (payable, 'liability', charge.currency) ON CONFLICT (code) DO NOTHING;
    entitlement := ridepay_driver_entitlement(charge_id, assigned.commission_bps);
    kept := charge.amount_cents
            - ridepay_refunded(charge.ride_id, ridepay_charge_intent(charge_id));
    PERFORM ridepay_ledger_post_nonzero('reallocation', charge_id || ':reallocation',
        charge.ride_id,
        ARRAY['platform:unassigned:' || charge.currency, payable,
              'platform:commission:' || charge.currency],
        ARRAY[kept, -entitlement, entitlement - kept]);
    PERFORM ridepay_transfer_owed(charge.ride_id, assigned.driver_id, charge_id,
                                  charge.currency, entitlement, NULL);
END
$$;

-- The driver owed again what `reversal` took, its refund having failed.
CREATE FUNCTION ridepay_reversal_undone(reversal transfer_reversals) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ridepay_transfer_owed(reversed.ride_id, reversal.driver_id, reversed.source_charge,
                                  reversal.currency, reversal.amount_cents, reversal.id)
    FROM transfers AS reversed WHERE reversed.id = reversal.transfer_id;
END
$$;

-- A reversal made: what the transfer sent comes back to the platform's
-- balance at the gateway, and the transfer has that much less left. If
-- its refund failed meanwhile, the driver is owed it again.
CREATE FUNCTION ridepay_ledger_reversal_made() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    UPDATE transfers SET amount_reversed_cents = amount_reversed_cents + NEW.amount_cents,
                         updated_at = now()
    WHERE id = NEW.transfer_id;
    PERFORM ridepay_ledger_post('transfer_reversal', NEW.gateway_reversal_id || ':reversal',
        (SELECT ride_id FROM transfers WHERE id = NEW.transfer_id), NULL,
        ARRAY[(SELECT payable_code FROM drivers WHERE id = NEW.driver_id) || ':' || NEW.currency,
              'gateway:' || NEW.currency],
        ARRAY[-NEW.amount_cents, NEW.amount_cents]);
    IF (SELECT status FROM refunds WHERE id = NEW.refund_id) IN ('failed', 'canceled') THEN
        PERFORM ridepay_reversal_undone(NEW);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER transfer_reversals_post_to_ledger AFTER UPDATE ON transfer_reversals
    FOR EACH ROW WHEN (OLD.gateway_reversal_id IS NULL AND NEW.gateway_reversal_id IS NOT NULL)
    EXECUTE FUNCTION ridepay_ledger_reversal_made();

-- A refund part posted against a transfer already made owes a reversal of the change in entitlement, at most what the
-- transfer has left once the reversals owed before it are made.
CREATE FUNCTION ridepay_reversal_owed(owed transfers, refund refunds, taken bigint) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    amount bigint;
BEGIN
    amount := least(taken, owed.amount_cents
                           - coalesce((SELECT sum(before.amount_cents)
                                       FROM transfer_reversals AS before
                                       WHERE before.transfer_id = owed.id
                                         AND before.status IN ('pending', 'reversed')), 0));
    IF amount > 0 THEN
        INSERT INTO transfer_reversals (transfer_id, refund_id, driver_id, currency,
                                        amount_cents, status)
        VALUES (owed.id, refund.id, owed.driver_id, owed.currency, amount, 'pending');
    END IF;
END
$$;

-- A refund part that fails: its reversal, if owed and not being made, is
-- cancelled; if made, the driver is owed it again.
CREATE FUNCTION ridepay_refund_failed_for_driver(refund refunds) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    reversal transfer_reversals;
BEGIN
    SELECT * INTO reversal FROM transfer_reversals WHERE refund_id = refund.id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    ELSIF reversal.status = 'reversed' THEN
        PERFORM ridepay_reversal_undone(reversal);
    ELSIF reversal.status = 'pending'
          AND (reversal.claimed_until IS NULL OR reversal.claimed_until < now()) THEN
        UPDATE transfer_reversals SET status = 'canceled', updated_at = now()
        WHERE id = reversal.id;
    END IF;
    -- One being made is left to its maker: made, it is owed again then.
END
$$;

-- As before, but a refund of a charge whose transfer was made owes a
-- reversal, and a refund that fails cancels its reversal or owes the
-- driver what it took.
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
    WHERE ride_id = NEW.ride_id AND source_charge = charge_id AND reowes_reversal_id IS NULL
    FOR UPDATE;
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
                               refunded, codes, amounts) IS NOT NULL AND taken > 0 THEN
            IF owed.gateway_transfer_id IS NULL THEN
                PERFORM ridepay_transfer_owes(owed, least(owed.amount_cents + taken,
                    ridepay_driver_entitlement(charge_id, (SELECT commission_bps FROM ride_drivers
                                                            WHERE ride_id = NEW.ride_id))
                    - owed.netted_cents));
            END IF;
            PERFORM ridepay_refund_failed_for_driver(NEW);
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
           ARRAY[into_gateway, taken, NEW.amount_cents - taken]) IS NOT NULL THEN
        -- A transfer being sent owes no less: what the refund took stays
        -- as the driver's debt.
        IF owed.gateway_transfer_id IS NULL THEN
            PERFORM ridepay_transfer_owes(owed, owed.amount_cents - least(taken, owed.amount_cents));
        ELSIF taken > 0 THEN
            PERFORM ridepay_reversal_owed(owed, NEW, taken);
        END IF;
    END IF;
    RETURN NULL;
END
$$;
