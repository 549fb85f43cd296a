//! What operators rely on: metrics, the OpenAPI document, request ids in
//! responses and logs, no secrets in logs, graceful shutdown, start-up
//! validation, and the migrations.

use std::path::Path;
use std::process::Command;

use nix::sys::signal::Signal;
use std::time::Duration;

use diesel::{Connection, PgConnection};
use serde_json::Value;

use crate::common::app::{database_only, skip, spawn_app, spawn_app_with, Answer, RIDE};
use crate::common::server_process::{run_refused, ServerProcess};
use crate::common::test_databases::create_test_database;

#[tokio::test]
async fn metrics_are_prometheus_text_counting_requests_and_idempotency_outcomes() {
    let app = spawn_app().await;
    app.post_ride("metered", RIDE).await;
    app.post_ride("metered", RIDE).await;

    let answer = app.get("/metrics").await;

    assert_eq!(answer.status, 200);
    assert!(answer
        .header("content-type")
        .unwrap()
        .starts_with("text/plain"));
    let text = String::from_utf8(answer.body).unwrap();
    for expected in [
        r#"ridepay_http_requests_total{method="POST",route="/api/rides",status="201"}"#,
        r#"ridepay_idempotency_outcomes_total{outcome="created"}"#,
        r#"ridepay_idempotency_outcomes_total{outcome="replayed"}"#,
        "ridepay_http_request_duration_seconds_bucket",
        "ridepay_db_pool_connections",
        "ridepay_db_pool_wait_seconds_count",
        "ridepay_oldest_unfinished_key_age_seconds",
    ] {
        assert!(text.contains(expected), "missing {expected} in\n{text}");
    }
}

#[tokio::test]
async fn the_openapi_document_parses_and_names_every_route_and_header() {
    let app = spawn_app().await;

    // Served without an API key.
    let answer = Answer::read(
        app.client
            .get(format!("{}/api/openapi.json", app.address))
            .send()
            .await
            .unwrap(),
    )
    .await;

    assert_eq!(answer.status, 200);
    let document = answer.json();
    assert!(document["openapi"].as_str().unwrap().starts_with("3."));
    let paths = document["paths"].as_object().unwrap();
    for (path, method) in [
        ("/api/rides", "post"),
        ("/api/rides", "get"),
        ("/api/rides/{id}", "get"),
        ("/api/openapi.json", "get"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/metrics", "get"),
    ] {
        assert!(
            paths[path][method].is_object(),
            "{method} {path} is not documented"
        );
    }
    let create = &paths["/api/rides"]["post"];
    assert_eq!(create["parameters"][0]["name"], "Idempotency-Key");
    assert_eq!(create["parameters"][0]["in"], "header");
    let created = &create["responses"]["201"]["headers"];
    assert!(created["Location"].is_object() && created["Idempotent-Replayed"].is_object());
    assert!(create["responses"]["409"]["headers"]["Retry-After"].is_object());
    for status in [
        "400", "401", "402", "408", "409", "413", "415", "422", "429", "500", "502", "503",
    ] {
        let content = &create["responses"][status]["content"]["application/problem+json"];
        assert!(
            content.is_object(),
            "POST /api/rides {status} is not a documented problem"
        );
    }
    assert!(document["components"]["schemas"]["Problem"].is_object());
    assert!(document["components"]["securitySchemes"]["api_key"].is_object());
}

#[tokio::test]
async fn request_ids_are_echoed_or_made_up() {
    let app = spawn_app().await;
    let with = |id: &'static str| {
        app.client
            .get(format!("{}/healthz", app.address))
            .header("X-Request-Id", id)
    };

    let echoed = with("abc-123").send().await.unwrap();
    let made_up = app
        .client
        .get(format!("{}/healthz", app.address))
        .send()
        .await
        .unwrap();
    let refused = with("bad id with spaces").send().await.unwrap();

    assert_eq!(echoed.headers()["x-request-id"], "abc-123");
    let generated = made_up.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(uuid::Uuid::parse_str(&generated).is_ok(), "{generated}");
    assert_ne!(refused.headers()["x-request-id"], "bad id with spaces");
}

#[tokio::test]
async fn log_lines_carry_the_request_id_and_never_a_secret() {
    let app = database_only();
    let log =
        std::env::temp_dir().join(format!("ridepay-log-{}.txt", uuid::Uuid::new_v4().simple()));
    let server = ServerProcess::start_logged(
        &app.database_url,
        &[("RUST_LOG", "debug"), ("SIMULATED_GATEWAY_FAIL_RATE", "1")],
        &log,
    );
    let answer = app
        .client
        .post(format!("{}/api/rides", server.address))
        .bearer_auth(&app.user.api_key)
        .header("Idempotency-Key", "logged")
        .header("Content-Type", "application/json")
        .header("X-Request-Id", "trace-me-123")
        .body(RIDE)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 503);
    drop(server);

    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_file(&log).ok();
    let line_of = |needle: &str| {
        text.lines()
            .find(|line| line.contains(needle))
            .map(str::to_owned)
    };
    // A line written inside the request, and the access line.
    let warning = line_of("payment gateway unavailable").expect("the gateway failure is logged");
    assert!(warning.contains("[trace-me-123]"), "{warning}");
    assert!(line_of("request_id=trace-me-123").is_some(), "{text}");
    assert!(
        line_of("config: ").unwrap().contains("password=***"),
        "the password is masked"
    );
    let password = url::Url::parse(&app.database_url)
        .unwrap()
        .password()
        .unwrap()
        .to_owned();
    for secret in [
        app.user.api_key.as_str(),
        &app.user.api_key[11..],
        password.as_str(),
        "Bearer",
    ] {
        assert!(!text.contains(secret), "the log shows a secret ({secret})");
    }
}

#[tokio::test]
async fn sigterm_and_sigint_let_the_request_in_flight_finish_then_stop() {
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let mut app = database_only();
        let mut server = ServerProcess::start(
            &app.database_url,
            &[("SIMULATED_GATEWAY_LATENCY_MS", "1500")],
        );
        app.address = server.address.clone();

        let in_flight = app.post_ride("graceful", RIDE);
        let stop = async {
            tokio::time::sleep(Duration::from_millis(400)).await;
            server.signal(signal);
        };
        let (answer, ()) = tokio::join!(in_flight, stop);

        assert_eq!(answer.status, 201, "{signal}");
        let status = server.wait_for_exit(Duration::from_secs(15));
        assert!(status.success(), "{signal}: {status:?}");
        assert!(app
            .try_post_ride_to(&app.address, &app.user.api_key, "after", RIDE)
            .await
            .is_err());
        assert_eq!(app.counts(), (1, 1, 1), "{signal}");
        assert_eq!(app.key_state("graceful")["recovery_point"], "finished");
    }
}

/// `ridepay` started with `env` only, on a port of its own choosing.
fn start_with(env: &[(&str, &str)]) -> (bool, String) {
    let env: Vec<(&str, &str)> = [("BIND_ADDR", "127.0.0.1:0")]
        .into_iter()
        .chain(env.iter().copied())
        .collect();
    run_refused(&[], &env)
}

#[test]
fn bad_configuration_is_refused_at_start_with_a_clear_message() {
    for (env, message) in [
        (
            &[("DATABASE_URL", "mysql://app:pw@localhost/x")][..],
            "DATABASE_URL is not a connection string libpq accepts",
        ),
        (
            &[
                ("DATABASE_URL", "postgres://x/db"),
                ("DATABASE_POOL_SIZE", "2"),
            ],
            "DATABASE_POOL_SIZE=2 leaves no connection",
        ),
        (
            &[
                ("DATABASE_URL", "postgres://x/db"),
                ("RECEIPT_WEBHOOK_URL", "not a url"),
                (
                    "RECEIPT_WEBHOOK_SECRET",
                    crate::webhook_endpoints::receipts::SECRET,
                ),
            ],
            "RECEIPT_WEBHOOK_URL is not a valid URL",
        ),
        (
            &[
                ("DATABASE_URL", "postgres://x/db"),
                ("RECEIPT_WEBHOOK_URL", "https://receipts.example/hook"),
            ],
            "RECEIPT_WEBHOOK_URL needs RECEIPT_WEBHOOK_SECRET",
        ),
        (
            &[
                ("DATABASE_URL", "postgres://x/db"),
                ("RECEIPT_WEBHOOK_URL", "https://receipts.example/hook"),
                ("RECEIPT_WEBHOOK_SECRET", "whsec_dG9vc2hvcnQ="),
            ],
            "RECEIPT_WEBHOOK_SECRET must be whsec_ and the base64 of 24 to 64 random bytes",
        ),
        (
            &[
                ("DATABASE_URL", "postgres://x/db"),
                ("GATEWAY", "stripe"),
                ("STRIPE_API_KEY", "sk_test_x"),
                ("IDEMPOTENCY_LEASE_SECS", "5"),
            ],
            "IDEMPOTENCY_LEASE_SECS (5s) must be at least twice",
        ),
        (
            &[("DATABASE_URL", "postgres://x/db"), ("GATEWAY", "paypal")],
            "GATEWAY",
        ),
        (
            &[
                ("DATABASE_URL", "postgres://x/db"),
                ("IDEMPOTENCY_RETENTION_HOURS", "24"),
            ],
            "IDEMPOTENCY_RETENTION_HOURS must be at least 25",
        ),
        (
            &[
                ("DATABASE_URL", "postgres://x/db"),
                ("COMPLETER_CHARGE_DEADLINE_HOURS", "30"),
            ],
            "must be under 24",
        ),
        (
            // Refused before the embedded PostgreSQL would start.
            &[("BIND_ADDR", "garbage")],
            "BIND_ADDR=\"garbage\" is not an address to listen on",
        ),
        (
            &[("DATABASE_URL", "postgres://app:pw@127.0.0.1:1/ridepay")],
            "cannot connect to the database at user=app password=*** dbname=ridepay \
             host=127.0.0.1 port=1",
        ),
    ] {
        let (ok, stderr) = start_with(env);
        assert!(!ok, "{env:?} started");
        assert!(stderr.contains(message), "{env:?}: {stderr}");
        assert!(!stderr.contains("app:pw"), "{stderr}");
        // One clear line, not a pool's retries one after another.
        assert!(!stderr.contains("r2d2"), "{stderr}");
    }
}

#[test]
fn every_migration_reverts_and_applies_again() {
    let url = create_test_database();
    let mut conn = PgConnection::establish(&url).unwrap();

    ridepay::db::revert_all_migrations(&mut conn).unwrap();
    assert!(!ridepay::db::migrations_applied(&mut conn).unwrap());
    ridepay::db::run_migrations(&mut conn).unwrap();

    assert!(ridepay::db::migrations_applied(&mut conn).unwrap());
}

/// `src/schema.rs` is what `diesel print-schema` makes of the migrations. CI
/// installs the pinned diesel_cli; elsewhere the check runs when it is there.
#[test]
fn schema_rs_is_what_the_migrations_generate() {
    let diesel = std::env::var("DIESEL_CLI").unwrap_or_else(|_| "diesel".to_owned());
    let url = create_test_database();
    // The service's tables, then the doubles', split as `diesel.toml` splits
    // them (its filters given as flags: with two keys, the CLI prints both).
    let no_config = std::env::temp_dir().join(format!(
        "ridepay-diesel-{}.toml",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&no_config, "").unwrap();
    for (filter, file) in [
        ("--except-tables", "src/schema.rs"),
        ("--only-tables", "doubles/src/schema.rs"),
    ] {
        let output = match Command::new(&diesel)
            .args([
                "print-schema",
                "--database-url",
                &url,
                filter,
                "^simulated_",
            ])
            .arg("--config-file")
            .arg(&no_config)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
        {
            Ok(output) => output,
            Err(err) => {
                skip(
                    "schema_rs_is_what_the_migrations_generate",
                    &format!("no diesel_cli ({err}); CI installs it"),
                );
                return;
            }
        };
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let committed =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
        assert_eq!(
            String::from_utf8(output.stdout).unwrap(),
            committed,
            "regenerate {file}: `ridepay migrate`, then `diesel migration run`"
        );
    }
    std::fs::remove_file(&no_config).ok();
}

#[tokio::test]
async fn operators_can_inspect_keys_and_rotate_api_keys() {
    let app = spawn_app_with(|s| s.gateway.simulated.fail_rate = 1.0).await;
    app.post_ride("inspect-me", RIDE)
        .await
        .assert_problem(503, "payment-gateway-unavailable");
    let run = |args: &[&str]| {
        let output = crate::common::server_process::run(&app.database_url, args, &[]);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let user = app.user.id.to_string();

    let shown: Value = serde_json::from_str(&run(&[
        "keys",
        "show",
        "--user",
        &user,
        "--key",
        "inspect-me",
    ]))
    .unwrap();
    let stuck = run(&["keys", "stuck", "--idle-secs", "0"]);
    let rotated: Value =
        serde_json::from_str(&run(&["users", "rotate-key", "--user", &user])).unwrap();

    assert_eq!(shown["recovery_point"], "ride_created");
    assert_eq!(shown["lease"]["held"], false);
    assert_eq!(shown["response"], Value::Null);
    assert_eq!(stuck.lines().count(), 1);
    assert!(stuck.contains("inspect-me"));
    app.get("/api/rides")
        .await
        .assert_problem(401, "unauthorized");
    assert_eq!(
        app.get_as(rotated["api_key"].as_str().unwrap(), "/api/rides")
            .await
            .status,
        200
    );
}
