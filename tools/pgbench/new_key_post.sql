-- What one new-key POST /api/rides sends to PostgreSQL, as pure SQL, with the
-- same transaction boundaries (src/http/auth.rs, src/idempotency/claim.rs,
-- src/idempotency/flow.rs, src/rides/service.rs, src/rides/phases.rs,
-- src/doubles/store.rs). The extractor's own check of the API key is left
-- out: a key verified in the last minute passes from memory.
-- The benchmark passes first_user, riders, key_hash (hex), installation and
-- fingerprint with -D; client i acts as rider i % riders, as the HTTP load
-- does. `SELECT 1` is r2d2's check of a connection taken from the pool
-- (test_on_check_out, on by default), which the server pays at every
-- pool.get(). pgbench reads a colon as the start of a variable even inside a
-- string, so literals holding one are built with jsonb_build_object instead.
\set n random(1, 9223372036854775806)
\set user_id :first_user + :client_id % :riders

-- Authentication, then the lock-free lookup of the key, on one checkout (which
-- the claim's transaction uses too).
SELECT 1;
SELECT id, email, stripe_customer_id, created_at
  FROM users WHERE api_key_hash = decode(:key_hash, 'hex') LIMIT 1;
SELECT id, user_id, request_fingerprint, lease_epoch, locked_at, recovery_point,
       response_status, response_headers, response_body, created_at,
       needs_attention_at, now()
  FROM idempotency_keys WHERE user_id = :user_id AND key = 'pgbench-' || :n::text LIMIT 1;

-- Transaction 1: the claim of a new key and RideCreated.
BEGIN;
INSERT INTO idempotency_keys (user_id, key, request_method, request_path,
        request_fingerprint, request_params, lease_epoch, locked_at, recovery_point, endpoint)
  VALUES (:user_id, 'pgbench-' || :n::text, 'POST', '/api/rides',
        :fingerprint,
        jsonb_build_object('amount_cents', 2000, 'currency', 'usd', 'origin_lat', 37.77,
            'origin_lon', -122.42, 'payment_source', 'tok_visa', 'target_lat', 37.8,
            'target_lon', -122.27),
        1, now(), 'started', 'rides.create')
  ON CONFLICT (user_id, key) DO NOTHING RETURNING id AS key_id
\gset
INSERT INTO rides (user_id, idempotency_key_id, origin_lat, origin_lon, target_lat,
        target_lon, amount_cents, currency, payment_source)
  VALUES (:user_id, :key_id, 37.77, -122.42, 37.8, -122.27, 2000, 'usd', 'tok_visa')
  RETURNING id AS ride_id, created_at AS ride_created_at
\gset
INSERT INTO audit_records (user_id, action, resource_type, resource_id, data)
  VALUES (:user_id, 'ride.created', 'ride', :ride_id,
        jsonb_build_object('idempotency_key_id', :key_id::bigint, 'amount_cents', 2000));
UPDATE idempotency_keys SET recovery_point = 'ride_created', last_run_at = now(), updated_at = now()
  WHERE id = :key_id AND lease_epoch = 1 AND recovery_point = 'started'
  RETURNING id;
COMMIT;

-- Transaction 2: the simulated gateway records the charge, as an external
-- system would, on its own checkout (one statement, its own transaction).
SELECT 1;
INSERT INTO simulated_charges (id, idempotency_key, amount_cents, currency, source,
        description, metadata, status, failure_code, decline_code)
  VALUES ('ch_sim_pgbench_' || :key_id::text,
        'ridepay-' || :installation || '-ride-charge-' || :key_id::text,
        2000, 'usd', 'tok_visa', 'ridepay ride ' || :ride_id::text,
        jsonb_build_object('ride_id', :ride_id::text, 'idempotency_key_id', :key_id::text),
        'succeeded', NULL, NULL)
  ON CONFLICT (idempotency_key) DO NOTHING RETURNING *;

-- Transaction 3: ChargeCompleted and Finished, with one write of the key.
SELECT 1;
BEGIN;
UPDATE rides SET status = 'charged', charge_id = 'ch_sim_pgbench_' || :key_id::text, updated_at = now()
  WHERE id = :ride_id AND status = 'pending'
  RETURNING id, user_id, idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon,
       amount_cents, amount_refunded_cents, currency, payment_source, status, charge_id,
       created_at, updated_at;
INSERT INTO staged_jobs (job_type, payload)
  VALUES ('ride_receipt', jsonb_build_object('ride_id', :ride_id::bigint, 'user_id', :user_id::bigint));
UPDATE idempotency_keys SET recovery_point = 'finished', response_status = 201,
        response_headers = jsonb_build_array(jsonb_build_array('Content-Type', 'application/json'),
                                             jsonb_build_array('Location', '/api/rides/' || :ride_id::text)),
        response_body = convert_to(jsonb_build_object('id', :ride_id::bigint, 'origin_lat', 37.77,
            'origin_lon', -122.42, 'target_lat', 37.8, 'target_lon', -122.27, 'amount_cents', 2000,
            'amount_refunded_cents', 0, 'currency', 'usd', 'status', 'charged',
            'charge_id', 'ch_sim_pgbench_' || :key_id::text, 'created_at', now())::text, 'UTF8'),
        locked_at = NULL, last_run_at = now(), updated_at = now()
  WHERE id = :key_id AND lease_epoch = 1 AND recovery_point = 'ride_created'
  RETURNING id;
COMMIT;
