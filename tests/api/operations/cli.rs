//! The command line, run as the built binary.

use std::path::Path;
use std::process::Command;

use diesel::RunQueryDsl;
use serde_json::Value;

use crate::common::app::{spawn_app, RIDE};

fn ridepay(database_url: &str, args: &[&str]) -> (bool, String) {
    let output = crate::common::server_process::run(database_url, args, &[]);
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
    )
}

#[tokio::test]
async fn users_create_prints_a_working_api_key_once() {
    let app = spawn_app().await;

    let (ok, out) = ridepay(
        &app.database_url,
        &[
            "users",
            "create",
            "--email",
            "rider@example.com",
            "--stripe-customer",
            "cus_cli",
        ],
    );

    assert!(ok, "{out}");
    let created: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(created["email"], "rider@example.com");
    let key = created["api_key"].as_str().unwrap();
    assert!(key.starts_with("ridepay_sk_") && key.len() >= "ridepay_sk_".len() + 32);
    assert_eq!(app.get_as(key, "/api/rides").await.status, 200);
    // Only the hash is stored.
    assert_eq!(
        app.count(&format!(
            "users WHERE encode(api_key_hash, 'hex') LIKE '%{}%'",
            &key[11..]
        )),
        0
    );
}

#[tokio::test]
async fn reap_deletes_old_finished_keys_and_prints_the_count() {
    let app = spawn_app().await;
    app.post_ride("old", RIDE).await;
    app.post_ride("young", RIDE).await;
    diesel::sql_query(
        "UPDATE idempotency_keys SET updated_at = now() - interval '3 days' WHERE key = 'old'",
    )
    .execute(&mut app.db())
    .unwrap();

    let (ok, out) = ridepay(&app.database_url, &["reap"]);

    assert!(ok);
    assert_eq!(out.trim(), r#"{"deleted":1}"#);
    assert_eq!(app.count("idempotency_keys"), 1);
}

#[test]
fn without_postgres_binaries_the_embedded_default_says_what_to_install() {
    let data = std::env::temp_dir().join(format!("ridepay-nopg-{}", uuid::Uuid::new_v4().simple()));
    let output = Command::new(env!("CARGO_BIN_EXE_ridepay"))
        .arg("migrate")
        .current_dir(std::env::temp_dir())
        .env_clear()
        .env("PG_BIN_DIR", "/nonexistent")
        .env("RIDEPAY_DATA_DIR", &data)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&data).ok();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("apt-get install postgresql") && stderr.contains("DATABASE_URL"),
        "{stderr}"
    );
}

#[test]
fn every_subcommand_has_help() {
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["migrate", "--help"],
        &["reap", "--help"],
        &["users", "create", "--help"],
        &["simulated-gateway", "restrict-account", "--help"],
        &["simulated-gateway", "make-available", "--help"],
        &["simulated-gateway", "pay-out", "--help"],
    ] {
        let (ok, out) = ridepay("postgres://unused", args);
        assert!(ok && out.contains("Usage"), "{args:?}: {out}");
    }
}

#[tokio::test]
async fn a_second_users_create_with_the_same_email_says_so_plainly() {
    let app = spawn_app().await;
    let args = ["users", "create", "--email", "twice@example.com"];
    assert!(ridepay(&app.database_url, &args).0);

    let output = Command::new(env!("CARGO_BIN_EXE_ridepay"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .env_clear()
        .env("DATABASE_URL", &app.database_url)
        .env("RUST_LOG", "off")
        .output()
        .unwrap();

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("a user with the email twice@example.com exists already"),
        "{stderr}"
    );
    assert!(!stderr.contains("users_email_lower_key"), "{stderr}");
}

/// The built binary in `folder`, with nothing set but what is given.
fn ridepay_in(folder: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ridepay"));
    command
        .args(args)
        .current_dir(folder)
        .env_clear()
        .env("RUST_LOG", "off");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

/// The postmaster of the embedded cluster of `data_dir`, if one runs.
fn postmaster(data_dir: &Path) -> Option<i32> {
    let record: Value =
        serde_json::from_slice(&std::fs::read(data_dir.join("cluster.json")).ok()?).ok()?;
    let root = Path::new(record["root"].as_str()?);
    let pid: i32 = std::fs::read_to_string(root.join("data/postmaster.pid"))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
        .is_ok()
        .then_some(pid)
}

#[test]
fn a_subcommand_stops_the_embedded_postgres_it_started_and_db_url_and_stop_manage_it() {
    let folder = std::env::temp_dir().join(format!(
        "ridepay-test-cli-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir(&folder).unwrap();
    let data_dir = folder.join(".ridepay");

    let migrated = ridepay_in(&folder, &["migrate"], &[]);
    let after_migrate = postmaster(&data_dir);
    let url = ridepay_in(&folder, &["db", "url"], &[]);
    let after_url = postmaster(&data_dir);
    let stopped = ridepay_in(&folder, &["db", "stop"], &[]);
    let after_stop = postmaster(&data_dir);
    std::fs::remove_dir_all(&folder).ok();

    assert!(migrated.status.success(), "{migrated:?}");
    assert_eq!(after_migrate, None, "migrate left its PostgreSQL running");
    let url = String::from_utf8(url.stdout).unwrap();
    // The service's own role, on the cluster's private socket.
    assert!(url.starts_with("postgres://ridepay:"), "{url}");
    assert!(url.contains("@%2F"), "{url}");
    assert!(url.trim_end().ends_with("/ridepay"), "{url}");
    assert!(
        after_url.is_some(),
        "db url starts it and leaves it running"
    );
    assert!(stopped.status.success(), "{stopped:?}");
    assert_eq!(after_stop, None);
}

#[test]
fn fake_gateway_takes_its_webhook_secret_from_dot_env_like_every_setting() {
    let folder = std::env::temp_dir().join(format!(
        "ridepay-test-dotenv-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(
        folder.join(".env"),
        "STRIPE_WEBHOOK_SECRET=whsec_from_dotenv\n",
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_ridepay"))
        .args([
            "fake-gateway",
            "--bind",
            "127.0.0.1:0",
            "--database-url",
            // Never reached: the flags are judged first.
            "postgres://nobody@127.0.0.1:1/none",
            "--webhook-url",
            "http://127.0.0.1:9/webhooks/stripe",
        ])
        .current_dir(&folder)
        .env_clear()
        .env("RUST_LOG", "off")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    std::fs::remove_dir_all(&folder).ok();
    let stderr = String::from_utf8_lossy(&output.stderr);

    // It got past the flags (which demand a secret with --webhook-url) and
    // failed only on the database it was pointed at.
    assert!(!stderr.contains("--webhook-secret"), "{stderr}");
    assert!(!stderr.contains("required"), "{stderr}");
    assert!(!output.status.success());
}

#[tokio::test]
async fn users_create_saves_a_card_of_stripes_form_and_refuses_any_other() {
    let app = spawn_app().await;
    let create = |email: &'static str, method: &'static str| {
        [
            "users",
            "create",
            "--email",
            email,
            "--stripe-customer",
            "cus_saved",
            "--payment-method",
            method,
        ]
    };

    let (saved, out) = ridepay(
        &app.database_url,
        &create("card@example.com", "pm_card_visa"),
    );
    let (refused, _) = ridepay(&app.database_url, &create("token@example.com", "tok_visa"));

    assert!(saved, "{out}");
    assert_eq!(
        app.count(
            "users WHERE email = 'card@example.com' AND stripe_customer_id = 'cus_saved' \
             AND stripe_payment_method_id = 'pm_card_visa'"
        ),
        1
    );
    assert!(!refused);
    assert_eq!(app.count("users WHERE email = 'token@example.com'"), 0);
}

#[tokio::test]
async fn users_create_makes_a_platform_user_without_a_card() {
    let app = spawn_app().await;
    let (ok, out) = ridepay(
        &app.database_url,
        &[
            "users",
            "create",
            "--role",
            "platform",
            "--email",
            "ops@example.com",
        ],
    );
    assert!(ok, "{out}");
    let created: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(created["role"], "platform");
    assert!(created["api_key"]
        .as_str()
        .unwrap()
        .starts_with("ridepay_sk_"));
    assert_eq!(app.count("users WHERE role = 'platform'"), 1);

    let refused = |args: &[&str]| {
        let output = crate::common::server_process::run(&app.database_url, args, &[]);
        assert!(!output.status.success());
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let carded = [
        "--email",
        "carded@example.com",
        "--stripe-customer",
        "cus_x",
    ];
    let said = refused(&[&["users", "create", "--role", "platform"][..], &carded].concat());
    assert!(said.contains("takes no card"), "{said}");
    let said = refused(&[
        "users",
        "create",
        "--role",
        "driver",
        "--email",
        "d@example.com",
    ]);
    assert!(said.contains("rider or platform"), "{said}");
    assert_eq!(app.count("users"), 2);
}
