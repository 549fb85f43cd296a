-- A fixed baseline, not the server's SQL: the classic four-transaction
-- atomic-phases flow of an idempotent POST /api/rides (Stripe's Rocket Rides
-- atomic example) as plain SQL against ridepay's own tables. It does not move
-- with the code, so a ratio to it shows what the server's own design costs
-- against the textbook one on the same tables and machine.
-- There is no gateway: phase 3 records only the recovery point a charge would
-- reach. Each phase is its own transaction, with its own BEGIN and COMMIT as
-- Rocket Rides sends them, at PostgreSQL's default isolation (the server's
-- too; under Rocket Rides' SERIALIZABLE, pgbench would abort on the
-- serialization failures of concurrent clients). Audit records and the
-- ride's events are left out: they are the application's, not the flow's.
-- The benchmark passes first_user, riders and fingerprint with -D; client i
-- acts as rider i % riders, as the HTTP load does. pgbench reads a colon as
-- the start of a variable even inside a string, so literals holding one are
-- built with jsonb_build_object instead. The ride's public id is 18 bytes
-- made from the key's number, spelt in hex in the answer (the server's
-- base32 is as long: `ride_` and 29 characters).
\set n random(1, 9223372036854775806)
\set user_id :first_user + :client_id % :riders

-- Phase 1: the claim, then the key row locked for this request.
BEGIN;
INSERT INTO idempotency_keys (user_id, key, request_method, request_path,
        request_fingerprint, request_params, lease_epoch, locked_at, endpoint)
  VALUES (:user_id, 'atomic-' || :n::text, 'POST', '/api/rides', :fingerprint,
        jsonb_build_object('amount_cents', 2000, 'capture_method', 'automatic',
            'currency', 'usd', 'origin_lat', 37.77, 'origin_lon', -122.42,
            'payment_method', 'pm_card_visa', 'target_lat', 37.8, 'target_lon', -122.27),
        1, now(), 'rides.create')
  ON CONFLICT (user_id, key) DO NOTHING;
SELECT id AS key_id, recovery_point, lease_epoch, request_fingerprint, request_params
  FROM idempotency_keys
  WHERE user_id = :user_id AND key = 'atomic-' || :n::text
  FOR UPDATE
\gset
COMMIT;

-- Phase 2: the ride, and the key at ride_created.
BEGIN;
INSERT INTO rides (public_id, user_id, idempotency_key_id, origin_lat, origin_lon,
        target_lat, target_lon, amount_cents, currency, payment_method, capture_method)
  VALUES (decode(lpad(to_hex(:n::bigint), 36, '0'), 'hex'), :user_id, :key_id, 37.77, -122.42, 37.8,
        -122.27, 2000, 'usd', 'pm_card_visa', 'automatic')
  RETURNING id AS ride_id
\gset
UPDATE idempotency_keys SET recovery_point = 'ride_created', last_run_at = now(),
        updated_at = now()
  WHERE id = :key_id;
COMMIT;

-- Phase 3: the key at charge_completed.
BEGIN;
UPDATE idempotency_keys SET recovery_point = 'charge_completed', last_run_at = now(),
        updated_at = now()
  WHERE id = :key_id;
COMMIT;

-- Phase 4: the response stored and the key finished.
BEGIN;
UPDATE idempotency_keys
  SET locked_at = NULL, last_run_at = now(), updated_at = now(), recovery_point = 'finished',
      response_status = 201,
      response_headers = jsonb_build_array(jsonb_build_array('Content-Type', 'application/json')),
      response_body = convert_to(jsonb_build_object(
          'id', 'ride_' || lpad(to_hex(:n::bigint), 29, '0'), 'status', 'captured',
          'amount_cents', 2000, 'currency', 'usd',
          'origin_lat', 37.77, 'origin_lon', -122.42, 'target_lat', 37.8, 'target_lon', -122.27,
          'created_at', now())::text, 'UTF8')
  WHERE id = :key_id;
COMMIT;
