//! `ridepay simulated-gateway`, run as the built binary: the doubles' test
//! controls act on the accounts (and their balances) of either double, on
//! the service's database or on the records database `--database-url`
//! names; and `ridepay fake-gateway` wants a secret for its Connect
//! endpoint.

use diesel::{Connection, PgConnection};
use ridepay::config::SimulatedGatewaySettings;
use ridepay::payments::{CaptureMethod, CreateAccount, CreateTransfer};
use ridepay_doubles::events::Double;
use ridepay_doubles::intents::{self, IntentSettings};
use ridepay_doubles::{accounts, transfers};

use crate::common::app::spawn_app;
use crate::common::database::count;
use crate::common::gateway::intent_request;
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

/// A payable account of `double` in the records at `database_url`, sent
/// 1500 of a fare: pending in its balance.
fn paid_account_of(database_url: &str, double: Double) -> String {
    let account = account_of(database_url, double);
    let mut conn = PgConnection::establish(database_url).unwrap();
    accounts::activate(&mut conn, &account).unwrap();
    let settings = IntentSettings {
        double,
        authentication_page: "http://127.0.0.1:9/authenticate".to_owned(),
        authorization_ttl: SimulatedGatewaySettings::default().authorization_ttl,
        extended_authorization_ttl: SimulatedGatewaySettings::default().extended_authorization_ttl,
    };
    let request = intent_request("fare", "pm_card_visa", CaptureMethod::Automatic);
    let intent = intents::create(&mut conn, &request, &settings).unwrap();
    let transfer = CreateTransfer {
        idempotency_key: "share".to_owned(),
        amount_cents: 1500,
        currency: "eur".to_owned(),
        destination: account.clone(),
        source_transaction: intent.latest_charge.unwrap(),
        metadata: Vec::new(),
    };
    let pending_for = SimulatedGatewaySettings::default().transfer_available;
    transfers::create(&mut conn, &transfer, double, pending_for).unwrap();
    account
}

/// The first amount of a printed balance's `side`.
fn amount(balance: &serde_json::Value, side: &str) -> serde_json::Value {
    balance[side][0]["amount_cents"].clone()
}

#[tokio::test]
async fn the_controls_make_either_doubles_balance_available_and_pay_it_out() {
    let app = spawn_app().await;
    let records = create_test_database();
    let simulated = paid_account_of(&app.database_url, Double::Simulated);
    let fake = paid_account_of(&records, Double::Fake);
    let control = |database_url: &str, control: &str, account: &str| {
        run_json(
            "postgres://unused",
            &[
                "simulated-gateway",
                control,
                account,
                "--database-url",
                database_url,
            ],
            &[],
        )
    };

    let available = control(&app.database_url, "make-available", &simulated);
    let paid_out = control(&app.database_url, "pay-out", &simulated);
    let fake_available = control(&records, "make-available", &fake);
    let fake_paid_out = control(&records, "pay-out", &fake);

    for made_available in [&available, &fake_available] {
        assert_eq!(made_available["available"][0]["currency"], "eur");
        assert_eq!(
            (
                amount(made_available, "available"),
                amount(made_available, "pending")
            ),
            (1500.into(), 0.into())
        );
    }
    for emptied in [&paid_out, &fake_paid_out] {
        assert_eq!(
            (amount(emptied, "available"), amount(emptied, "pending")),
            (0.into(), 0.into())
        );
    }
    let output = run(
        &app.database_url,
        &["simulated-gateway", "pay-out", "acct_none"],
        &[],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("No such account: 'acct_none'"), "{stderr}");
}
