-- What one new-key POST /api/rides (pm_card_visa, capture_method automatic)
-- sends to PostgreSQL with the simulated gateway, as pure SQL, with the same
-- transaction boundaries: seven statements (src/http/auth.rs,
-- src/idempotency/claim.rs, src/idempotency/flow.rs,
-- src/idempotency/finishing.rs, src/rides/service.rs, src/rides/phases.rs,
-- src/doubles/intents/one_statement.rs). The extractor's own check of the API
-- key is left out: a key verified in the last minute passes from memory. The
-- event the simulated gateway records here is applied after the answer by a
-- worker, which the benchmark switches off on the server
-- (SIMULATED_GATEWAY_EVENTS_ENABLED=false): neither side carries that work.
-- The benchmark passes first_user, riders, key_hash (hex), installation,
-- fingerprint and return_url with -D; client i acts as rider i % riders, as
-- the HTTP load does. The pool checks a connection at checkout without a
-- round trip (src/db/mod.rs), so no statement stands for it. pgbench reads a
-- colon as the start of a variable even inside a string, so literals holding
-- one are built with jsonb_build_object instead. The ride's public id, which
-- the server derives from the request and sends as 18 bytes, is 18 bytes
-- made from the key's number here; the answer spells it in hex where the
-- server spells it in base32, the same length (`ride_` and 29 characters).
\set n random(1, 9223372036854775806)
\set user_id :first_user + :client_id % :riders

-- The caller and the lock-free lookup of their key in one SELECT, on one
-- checkout (which the claim's transaction uses too).
SELECT users.id, users.public_id, users.role, k.id, k.user_id, k.request_fingerprint,
       k.lease_epoch, k.locked_at, k.recovery_point, k.response_status, k.response_headers,
       k.response_body, k.created_at, k.needs_attention_at, k.call_version, k.ridepay_key,
       k.call_generation, k.outcome_unknown_at, now()
  FROM users LEFT JOIN idempotency_keys k
    ON k.user_id = users.id AND k.key = 'pgbench-' || :n::text
  WHERE users.api_key_hash = decode(:key_hash, 'hex');

-- Transaction 1: the claim of a new key, inserted at the point RideCreated
-- reaches, and RideCreated: the ride with its audit record in one statement.
BEGIN;
INSERT INTO idempotency_keys (user_id, key, request_method, request_path,
        request_fingerprint, call_version, ridepay_key, request_params, lease_epoch, locked_at,
        recovery_point, endpoint)
  VALUES (:user_id, 'pgbench-' || :n::text, 'POST', '/api/rides',
        :fingerprint, 4, encode(sha256(convert_to(:n::text, 'UTF8')), 'hex'),
        jsonb_build_object('amount_cents', 2000, 'capture_method', 'automatic',
            'currency', 'usd', 'origin_lat', 37.77, 'origin_lon', -122.42,
            'payment_method', 'pm_card_visa', 'target_lat', 37.8, 'target_lon', -122.27),
        :n, now(), 'ride_created', 'rides.create')
  ON CONFLICT DO NOTHING RETURNING id AS key_id
\gset
WITH changed AS (
    INSERT INTO rides (public_id, user_id, idempotency_key_id, origin_lat, origin_lon,
        target_lat, target_lon, amount_cents, currency, payment_method, capture_method,
        customer, return_url)
      VALUES (decode(lpad(to_hex(:n::bigint), 36, '0'), 'hex'), :user_id, :key_id, 37.77, -122.42,
        37.8, -122.27, 2000, 'usd', 'pm_card_visa', 'automatic', NULL, :return_url)
      ON CONFLICT (public_id) DO NOTHING
      RETURNING id, public_id, user_id, idempotency_key_id, origin_lat, origin_lon, target_lat,
        target_lon, amount_cents, amount_refunded_cents, currency, payment_method, status,
        charge_id, created_at, capture_method, customer, return_url, payment_intent_id,
        client_secret, next_action, amount_authorized_cents, amount_captured_cents,
        settling_key_id, amount_capturable_max_cents, hold_expires_at, tip_cents,
        tip_payment_intent_id,
        (SELECT d.public_id FROM ride_drivers AS rd JOIN drivers AS d ON d.id = rd.driver_id
          WHERE rd.ride_id = rides.id)),
  record_0 AS (
    INSERT INTO audit_records (user_id, action, resource_type, resource_id, data)
      SELECT :user_id, 'ride.created', 'ride', changed.id,
        jsonb_build_object('amount_cents', 2000, 'idempotency_key_id', :key_id::bigint)
      FROM changed)
SELECT id AS ride_id, created_at AS ride_created_at FROM changed
\gset
COMMIT;

-- Statement 2, a transaction of its own: the simulated gateway creates the
-- PaymentIntent, as an external system would, on its own checkout: the
-- intent, its event and the call's answer kept for a retry, in one statement
-- (a retry's unique violation on the kept call undoes it all).
WITH intent AS (
    INSERT INTO simulated_payment_intents (id, client_secret, amount_cents,
        amount_capturable_cents, amount_received_cents, currency, customer, payment_method,
        capture_method, return_url, status, latest_charge, last_error_code,
        last_error_decline_code, last_error_message, authorization_expires_at, settles_at,
        metadata, gateway, created_at, overcapture_max_cents, captured_at, transfer_group)
      VALUES ('pi_sim_pgbench_' || :key_id::text,
        'pi_sim_pgbench_' || :key_id::text || '_secret_pgbench', 2000, 0, 2000, 'usd', NULL,
        'pm_card_visa', 'automatic', :return_url, 'succeeded',
        'ch_sim_pgbench_' || :key_id::text, NULL, NULL, NULL, NULL, NULL,
        jsonb_build_object('ridepay_key', encode(sha256(convert_to(:n::text, 'UTF8')), 'hex'),
            'ridepay_generation', '0', 'ridepay_installation', :installation::text),
        'simulated', date_trunc('second', now()), NULL, now(),
        'ridepay-' || encode(sha256(convert_to(:n::text, 'UTF8')), 'hex'))
      RETURNING id, gateway),
  announced AS (
    INSERT INTO simulated_events (id, gateway, event_type, object_kind, object_id)
      SELECT event.id, intent.gateway, event.event_type, 'payment_intent', intent.id
      FROM intent,
        unnest(ARRAY['evt_sim_pgbench_' || :key_id::text], ARRAY['payment_intent.succeeded'])
          WITH ORDINALITY AS event (id, event_type, position)
      ORDER BY event.position),
  kept AS (
    INSERT INTO simulated_intent_calls (idempotency_key, operation, parameters, answer)
      SELECT 'ridepay4-ride-payment-intent-'
              || encode(sha256(convert_to(:n::text, 'UTF8')), 'hex') || '-g0', 'create',
          jsonb_build_object(
              'hold', jsonb_build_object('extended', true, 'incremental', true,
                  'overcapture', true),
              'currency', 'usd', 'customer', NULL,
              'metadata', jsonb_build_array(
                  jsonb_build_array('ridepay_installation', :installation::text),
                  jsonb_build_array('ridepay_key',
                      encode(sha256(convert_to(:n::text, 'UTF8')), 'hex')),
                  jsonb_build_array('ridepay_generation', '0')),
              'return_url', :return_url::text, 'amount_cents', 2000,
              'capture_method', 'automatic', 'payment_method', 'pm_card_visa',
              'transfer_group', 'ridepay-' || encode(sha256(convert_to(:n::text, 'UTF8')), 'hex'),
              'idempotency_key', 'ridepay4-ride-payment-intent-'
                  || encode(sha256(convert_to(:n::text, 'UTF8')), 'hex') || '-g0',
              'expand_balance_transaction', true),
          jsonb_build_object('made', jsonb_build_object(
              'id', 'pi_sim_pgbench_' || :key_id::text, 'status', 'succeeded',
              'created', now()::text, 'currency', 'usd', 'disputed', false,
              'metadata', jsonb_build_object(
                  'ridepay_key', encode(sha256(convert_to(:n::text, 'UTF8')), 'hex'),
                  'ridepay_generation', '0', 'ridepay_installation', :installation::text),
              'next_action', NULL, 'amount_cents', 2000,
              'client_secret', 'pi_sim_pgbench_' || :key_id::text || '_secret_pgbench',
              'latest_charge', 'ch_sim_pgbench_' || :key_id::text,
              'capture_before', NULL, 'capture_method', 'automatic',
              'last_payment_error', NULL,
              'balance_transaction', jsonb_build_object(
                  'id', 'txn_sim_pgbench_' || :key_id::text, 'currency', 'usd',
                  'fee_cents', 88, 'net_cents', 1912, 'amount_cents', 2000,
                  'exchange_rate', NULL),
              'cancellation_reason', NULL, 'amount_received_cents', 2000,
              'amount_capturable_cents', 0, 'amount_capturable_max_cents', NULL))
      FROM intent)
SELECT count(*) AS written FROM intent;

-- Statement 3, a transaction of its own: ChargeCompleted (the ride captured,
-- its event staged by the rides trigger; its charge recorded, whose
-- triggers post the capture and the gateway's fee to the ledger) and
-- Finished (the key's answer), fenced by a lock on the key row taken in
-- the statement itself.
WITH fence AS (
    SELECT id FROM idempotency_keys
      WHERE id = :key_id AND lease_epoch = :n AND recovery_point = 'ride_created'
      FOR UPDATE),
  changed AS (
    UPDATE rides SET status = 'captured', payment_intent_id = 'pi_sim_pgbench_' || :key_id::text,
        client_secret = 'pi_sim_pgbench_' || :key_id::text || '_secret_pgbench',
        next_action = NULL, amount_authorized_cents = 2000, amount_captured_cents = 2000,
        settling_key_id = NULL, amount_capturable_max_cents = NULL, hold_expires_at = NULL,
        tip_cents = 0, updated_at = now()
      WHERE id = :ride_id
        AND status = ANY(ARRAY['pending', 'requires_action', 'processing', 'authorized'])
        AND settling_key_id IS NULL
        AND EXISTS (SELECT 1 FROM fence)
      RETURNING id, public_id, user_id, idempotency_key_id, origin_lat, origin_lon, target_lat,
        target_lon, amount_cents, amount_refunded_cents, currency, payment_method, status,
        charge_id, created_at, capture_method, customer, return_url, payment_intent_id,
        client_secret, next_action, amount_authorized_cents, amount_captured_cents,
        settling_key_id, amount_capturable_max_cents, hold_expires_at, tip_cents,
        tip_payment_intent_id,
        (SELECT d.public_id FROM ride_drivers AS rd JOIN drivers AS d ON d.id = rd.driver_id
          WHERE rd.ride_id = rides.id)),
  record_0 AS (
    INSERT INTO charges (id, payment_intent_id, ride_id, amount_cents, currency,
        balance_transaction_id, fee_cents)
      SELECT * FROM (SELECT 'ch_sim_pgbench_' || :key_id::text AS charge,
          'pi_sim_pgbench_' || :key_id::text, id, 2000, currency,
          'txn_sim_pgbench_' || :key_id::text, 88 FROM changed) AS captured
      WHERE charge IS NOT NULL ON CONFLICT DO NOTHING),
  finished AS (
    UPDATE idempotency_keys SET recovery_point = 'finished', response_status = 201,
        response_headers = jsonb_build_array(jsonb_build_array('Content-Type', 'application/json'),
                                             jsonb_build_array('Location',
                                                 '/api/rides/ride_' || lpad(to_hex(:n::bigint), 29, '0'))),
        response_body = convert_to(jsonb_build_object('id', 'ride_' || lpad(to_hex(:n::bigint), 29, '0'),
            'origin_lat', 37.77, 'origin_lon', -122.42, 'target_lat', 37.8, 'target_lon', -122.27,
            'amount_cents', 2000,
            'currency', 'usd', 'capture_method', 'automatic', 'status', 'captured',
            'payment_intent_id', 'pi_sim_pgbench_' || :key_id::text,
            'amount_authorized_cents', 2000, 'amount_captured_cents', 2000,
            'amount_refunded_cents', 0, 'amount_capturable_max_cents', NULL,
            'hold_expires_at', NULL, 'tip_cents', 0, 'next_action', NULL,
            'created_at', now(), 'driver', NULL)::text, 'UTF8'),
        locked_at = NULL, last_run_at = now(), updated_at = now()
      WHERE id = :key_id AND EXISTS (SELECT 1 FROM changed))
SELECT count(*) FROM changed;
