//! The command line, run as the built binary.

use std::process::Command;

use diesel::RunQueryDsl;
use serde_json::Value;

use crate::helpers::{spawn_app, RIDE};

fn ridepay(database_url: &str, args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ridepay"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .env_clear()
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
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
        "UPDATE idempotency_keys SET created_at = now() - interval '3 days' WHERE key = 'old'",
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
    ] {
        let (ok, out) = ridepay("postgres://unused", args);
        assert!(ok && out.contains("Usage"), "{args:?}: {out}");
    }
}
