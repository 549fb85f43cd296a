//! `ridepay simulated-gateway`, run as the built binary: the doubles' test
//! controls act on the accounts of either double, on the service's database
//! or on the records database `--database-url` names; and `ridepay
//! fake-gateway` wants a secret for its Connect endpoint.

use diesel::{Connection, PgConnection};
use ridepay::payments::CreateAccount;
use ridepay_doubles::accounts;
use ridepay_doubles::events::Double;

use crate::common::app::spawn_app;
use crate::common::database::count;
use crate::common::server_process::{run, run_json, run_refused};
use crate::common::test_databases::create_test_database;

/// A new account of `double` in the records at `database_url`.
fn account_of(database_url: &str, double: Double) -> String {
    let mut conn = PgConnection::establish(database_url).unwrap();
    let request = CreateAccount {
        idempotency_key: "driver".to_owned(),
        email: "driver@example.com".to_owned(),
        country: "GB".to_owned(),
        metadata: Vec::new(),
    };
    accounts::create(&mut conn, &request, double).unwrap().id
}

fn updates(database_url: &str, double: Double, id: &str) -> i64 {
    count(
        &mut PgConnection::establish(database_url).unwrap(),
        &format!(
            "simulated_events WHERE event_type = 'account.updated' AND object_id = '{id}' \
             AND gateway = '{}'",
            double.as_str()
        ),
    )
}

#[tokio::test]
async fn the_controls_restrict_and_activate_the_accounts_of_either_double() {
    let app = spawn_app().await;
    let records = create_test_database();
    let simulated = account_of(&app.database_url, Double::Simulated);
    let fake = account_of(&records, Double::Fake);
    let on_records = |control: &str| {
        run_json(
            "postgres://unused",
            &[
                "simulated-gateway",
                control,
                &fake,
                "--database-url",
                &records,
            ],
            &[],
        )
    };

    let activated = run_json(
        &app.database_url,
        &["simulated-gateway", "activate-account", &simulated],
        &[],
    );
    let fake_activated = on_records("activate-account");
    let fake_restricted = on_records("restrict-account");

    assert_eq!(
        (&activated["id"], &activated["transfers"]),
        (&simulated.as_str().into(), &"active".into())
    );
    assert_eq!(fake_activated["transfers"], "active");
    assert_eq!(
        (&fake_restricted["id"], &fake_restricted["transfers"]),
        (&fake.as_str().into(), &"inactive".into())
    );
    assert_eq!(updates(&app.database_url, Double::Simulated, &simulated), 1);
    assert_eq!(updates(&records, Double::Fake, &fake), 2);
}

#[tokio::test]
async fn an_unknown_account_is_refused_plainly() {
    let app = spawn_app().await;

    let output = run(
        &app.database_url,
        &["simulated-gateway", "restrict-account", "acct_none"],
        &[],
    );

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("No such account: 'acct_none'"), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn the_fakes_connect_endpoint_needs_its_secret() {
    let args = [
        "fake-gateway",
        "--bind",
        "127.0.0.1:0",
        "--database-url",
        // Never reached without the secret; reached, and refused, with it.
        "postgres://nobody@127.0.0.1:1/none",
        "--connect-webhook-url",
        "http://127.0.0.1:9/webhooks/stripe/connect",
    ];

    let (ok, without) = run_refused(&args, &[]);
    let (_, with) = run_refused(&args, &[("STRIPE_CONNECT_WEBHOOK_SECRET", "whsec_connect")]);

    assert!(!ok);
    assert!(without.contains("--connect-webhook-secret"), "{without}");
    assert!(!with.contains("--connect-webhook-secret"), "{with}");
    assert!(!with.contains("required"), "{with}");
}
