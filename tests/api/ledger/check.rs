//! `ridepay ledger check` and `ridepay ledger balances` on a live database:
//! clean after real rides, and failing, naming what it found, on a ledger
//! changed behind its triggers' back, on a balanced transaction no movement
//! explains, on a movement recorded and not posted, and on a posting that
//! is not its movement's.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::app::{ride_with, spawn_app, TestApp};
use crate::common::database::{lose_rides, sql};
use crate::common::ids::Id;
use crate::common::server_process::run;
use crate::ledger::{fee_of, posting, postings};

/// `ridepay ledger check <args>`: whether it passed, and its report.
fn check(app: &TestApp, args: &[&str]) -> (bool, Value) {
    let output = run(
        &app.database_url,
        &[&["ledger", "check"], args].concat(),
        &[],
    );
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "{err}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.success(), report)
}

/// The violations a report names, as (invariant, subject), sorted.
fn violations(report: &Value) -> Vec<(String, String)> {
    listed(report, "violations", "invariant")
}

/// What a report's `needs_attention` names, as (reason, subject), sorted.
fn needing_attention(report: &Value) -> Vec<(String, String)> {
    listed(report, "needs_attention", "reason")
}

/// The items of a report's `list`, as (their `what`, their subject), sorted.
fn listed(report: &Value, list: &str, what: &str) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = report[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item[what].as_str().unwrap().to_owned(),
                item["subject"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    found.sort();
    found
}

/// `ridepay ledger balances`: the balance of each account, by its code.
fn balances(app: &TestApp) -> impl Fn(&str) -> i64 {
    let output = run(&app.database_url, &["ledger", "balances"], &[]);
    assert!(output.status.success());
    let balances: Value = serde_json::from_slice(&output.stdout).unwrap();
    move |code: &str| {
        balances["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|account| account["code"] == code)
            .unwrap_or_else(|| panic!("{code} in {balances}"))["balance_cents"]
            .as_i64()
            .unwrap()
    }
}

/// One reconciliation pass (`ridepay reconcile`), and its summary.
fn reconcile(app: &TestApp) -> Value {
    crate::common::server_process::run_json(
        &app.database_url,
        &["reconcile"],
        &[("RECONCILE_SEARCH_LAG_SECS", "0")],
    )
}

fn named(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut named: Vec<(String, String)> = pairs
        .iter()
        .map(|(invariant, subject)| (invariant.to_string(), subject.to_string()))
        .collect();
    named.sort();
    named
}

/// A paid ride of 2,000, tipped 300 after its capture, then refunded 500:
/// that ride, and its fare's charge. And a paid ride of 2,000.
async fn rides_with_money(app: &TestApp) -> (Id, String) {
    let ride = app.saved_card_ride("saved").await;
    app.post_tip(ride, "tip", r#"{"amount_cents": 300}"#)
        .await
        .assert_status(200);
    app.post_refund(ride, "refund", r#"{"amount_cents": 500}"#)
        .await
        .assert_status(201);
    app.paid_ride("paid").await;
    let charge = text(
        app,
        &format!(
            "SELECT id AS value FROM charges WHERE ride_id = {} ORDER BY created_at LIMIT 1",
            ride.row_key()
        ),
    );
    (ride, charge)
}

fn text(app: &TestApp, query: &str) -> String {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        value: String,
    }
    use diesel::RunQueryDsl;
    diesel::sql_query(query)
        .get_result::<Row>(&mut app.db())
        .unwrap()
        .value
}

#[tokio::test]
async fn real_rides_check_clean_and_their_balances_add_up() {
    let app = spawn_app().await;
    rides_with_money(&app).await;

    let (passed, report) = check(&app, &[]);
    assert!(passed, "{report}");
    assert_eq!(
        report,
        json!({"violations": [], "needs_attention": [], "fees_pending": [], "unposted": {}})
    );
    assert!(check(&app, &["--since", "1h"]).0);

    let balance = balances(&app);
    let fees = fee_of(2000) + fee_of(300) + fee_of(2000);
    // Two fares and a tip captured, 500 refunded, the gateway's fees paid.
    assert_eq!(balance("gateway:usd"), 2000 + 300 + 2000 - 500 - fees);
    assert_eq!(
        balance("platform:unassigned:usd"),
        -(2000 + 300 + 2000 - 500)
    );
    assert_eq!(balance("platform:fees:usd"), fees);
    assert_eq!(balance("gateway:eur"), 0);

    // A ride lost as an asynchronous failover loses it, postings and all:
    // its charge is the gateway's alone, counted apart, not a violation.
    lose_rides(&mut app.db(), "amount_refunded_cents = 0");
    let (passed, report) = check(&app, &[]);
    assert!(passed, "{report}");
    assert_eq!(report["unposted"], json!({"charge": 1}));
}

/// A superuser turns a trigger off and changes an entry, balanced: the
/// check names the trigger while it is off, and the changed transaction and
/// its ride after it is on again.
#[tokio::test]
async fn an_entry_changed_with_the_triggers_off_fails_the_check() {
    let app = spawn_app().await;
    let (ride, charge) = rides_with_money(&app).await;
    let ride = ride.to_string();
    let mut conn = app.db();
    sql(
        &mut conn,
        "ALTER TABLE ledger_entries DISABLE TRIGGER ledger_entries_append_only",
    );
    sql(
        &mut conn,
        &format!(
            "UPDATE ledger_entries SET amount_cents = amount_cents + sign(amount_cents) * 100 \
             WHERE transaction_id = (SELECT id FROM ledger_transactions \
                                     WHERE source = '{charge}:capture')"
        ),
    );

    let (passed, report) = check(&app, &[]);
    assert!(!passed, "{report}");
    let capture = format!("{charge}:capture");
    assert_eq!(
        violations(&report),
        named(&[
            ("gateway_disagrees", &charge),
            ("hash_mismatch", &capture),
            ("not_its_template", &capture),
            ("ride_disagrees", &ride),
            (
                "trigger_disabled",
                "ledger_entries.ledger_entries_append_only"
            ),
        ])
    );

    sql(
        &mut conn,
        "ALTER TABLE ledger_entries ENABLE TRIGGER ledger_entries_append_only",
    );
    let (passed, report) = check(&app, &[]);
    assert!(!passed);
    assert_eq!(
        violations(&report),
        named(&[
            ("gateway_disagrees", &charge),
            ("hash_mismatch", &capture),
            ("not_its_template", &capture),
            ("ride_disagrees", &ride),
        ])
    );
}

#[tokio::test]
async fn a_balanced_transaction_no_movement_explains_fails_the_check() {
    let app = spawn_app().await;
    sql(
        &mut app.db(),
        "SELECT ridepay_ledger_post('capture', 'ch_nobody:capture', NULL, NULL, \
         ARRAY['gateway:usd', 'platform:commission:usd'], ARRAY[700, -700]::bigint[])",
    );
    let (_, charge) = rides_with_money(&app).await;
    let metrics_file = std::env::temp_dir().join(format!("ridepay-ledger-{charge}.prom"));

    let (passed, report) = check(&app, &["--metrics-file", metrics_file.to_str().unwrap()]);

    assert!(!passed);
    assert_eq!(
        violations(&report),
        named(&[
            ("not_at_gateway", "ch_nobody"),
            ("unexplained", "ch_nobody:capture")
        ])
    );
    let written = std::fs::read_to_string(&metrics_file).unwrap();
    assert!(
        written.contains("ridepay_ledger_violations{invariant=\"unexplained\"} 1\n"),
        "{written}"
    );
    assert!(
        written.contains("ridepay_ledger_violations{invariant=\"unbalanced\"} 0\n"),
        "{written}"
    );
    assert!(
        written.contains("ridepay_ledger_fees_pending 0\n"),
        "{written}"
    );
    assert!(!Path::new(&metrics_file.with_extension("prom.tmp")).exists());
    std::fs::remove_file(&metrics_file).unwrap();
}

/// A charge recorded with its posting trigger off is not posted; posted by
/// hand with another amount, it is not its capture's template.
#[tokio::test]
async fn a_movement_not_posted_or_posted_wrong_fails_the_check() {
    let app = spawn_app().await;
    let (ride, charge) = rides_with_money(&app).await;
    let mut conn = app.db();
    sql(
        &mut conn,
        "ALTER TABLE charges DISABLE TRIGGER charges_post_to_ledger",
    );
    sql(
        &mut conn,
        &format!(
            "INSERT INTO charges (id, ride_id, amount_cents, currency) \
             SELECT 'ch_unposted', ride_id, 400, currency FROM charges WHERE id = '{charge}'"
        ),
    );
    sql(
        &mut conn,
        "ALTER TABLE charges ENABLE TRIGGER charges_post_to_ledger",
    );

    let (passed, report) = check(&app, &[]);
    assert!(!passed);
    assert_eq!(
        violations(&report),
        named(&[("not_posted", "ch_unposted:capture")])
    );
    // A fee not yet known is pending, not a violation, for two
    // reconciliation intervals.
    assert_eq!(report["fees_pending"][0]["charge"], "ch_unposted");

    sql(
        &mut conn,
        "SELECT ridepay_ledger_post('capture', 'ch_unposted:capture', ride_id, NULL, \
         ARRAY['gateway:usd', 'platform:unassigned:usd'], ARRAY[40, -40]::bigint[]) \
         FROM charges WHERE id = 'ch_unposted'",
    );
    let (passed, report) = check(&app, &[]);
    assert!(!passed);
    assert_eq!(
        violations(&report),
        named(&[
            ("not_at_gateway", "ch_unposted"),
            ("not_its_template", "ch_unposted:capture"),
            ("ride_disagrees", &ride.to_string()),
        ])
    );
}

/// A capture recorded without its charge's balance transaction (a call
/// first sent before call version 4 and resent as it was): its fee is
/// pending, not a violation, until a reconciliation pass reads it from the
/// gateway's balance transactions and posts it, once.
#[tokio::test]
async fn a_fee_missing_from_a_capture_is_pending_until_reconciliation_posts_it() {
    let app = spawn_app().await;
    let ride = app.paid_ride("paid").await;
    diesel::connection::SimpleConnection::batch_execute(
        &mut app.db(),
        "BEGIN;
         ALTER TABLE ledger_entries DISABLE TRIGGER ledger_entries_append_only;
         ALTER TABLE ledger_transactions DISABLE TRIGGER ledger_transactions_append_only;
         DELETE FROM ledger_entries WHERE transaction_id IN
             (SELECT id FROM ledger_transactions WHERE kind = 'fee');
         DELETE FROM ledger_transactions WHERE kind = 'fee';
         ALTER TABLE ledger_entries ENABLE TRIGGER ledger_entries_append_only;
         ALTER TABLE ledger_transactions ENABLE TRIGGER ledger_transactions_append_only;
         UPDATE charges SET balance_transaction_id = NULL, fee_cents = NULL;
         COMMIT;",
    )
    .unwrap();
    let charge = text(&app, "SELECT id AS value FROM charges");

    let (passed, report) = check(&app, &[]);
    assert!(passed, "{report}");
    assert_eq!(report["fees_pending"][0]["charge"], charge.as_str());
    assert_eq!(report["fees_pending"][0]["ride_id"], ride.to_string());

    assert_eq!(reconcile(&app)["fees_posted"], 1);
    assert_eq!(
        check(&app, &[]),
        (
            true,
            json!({"violations": [], "needs_attention": [], "fees_pending": [], "unposted": {}})
        )
    );
    let fee = fee_of(2000);
    assert_eq!(
        postings(&app, ride)[1],
        posting("fee", &[("gateway:usd", -fee), ("platform:fees:usd", fee)])
    );
    assert_eq!(reconcile(&app)["fees_posted"], 0);
    assert_eq!(app.count("ledger_transactions WHERE kind = 'fee'"), 1);
}

/// The card whose charges and refunds the doubles settle in another
/// currency: usd in eur at 0.9, eur in usd at 1.1.
const CONVERTED: &str = "pm_card_ridepay_settlesConverted";

/// A paid ride of 2,000 in `currency` on the card that settles converted,
/// and its charge.
async fn converted_ride(app: &TestApp, key: &str, currency: &str) -> (Id, String) {
    let answer = app
        .post_ride(
            key,
            &ride_with(json!({ "payment_method": CONVERTED, "currency": currency })),
        )
        .await;
    answer.assert_status(201);
    let ride = Id::of(&answer.json()["id"]);
    let charge = text(
        app,
        &format!(
            "SELECT id AS value FROM charges WHERE ride_id = {}",
            ride.row_key()
        ),
    );
    (ride, charge)
}

/// A charge the gateway settles in another currency, both ways: the
/// request posts its capture in the ride's currency, the check says the
/// gateway moved it in another, and reconciliation records the balance
/// transaction, which posts the conversion and the fee, once. A refund is
/// posted in the ride's currency; the check lists it too, and passes.
#[tokio::test]
async fn a_charge_settled_in_another_currency_is_converted_and_needs_attention() {
    let app = spawn_app().await;
    let (dollars, dollars_charge) = converted_ride(&app, "usd", "usd").await;
    let (euros, euros_charge) = converted_ride(&app, "eur", "eur").await;
    let (passed, report) = check(&app, &[]);
    assert!(passed, "{report}");
    assert_eq!(report["fees_pending"].as_array().unwrap().len(), 2);
    let attention = |reason: &str, subjects: &[&str]| {
        let mut named: Vec<(String, String)> = subjects
            .iter()
            .map(|subject| (reason.to_owned(), subject.to_string()))
            .collect();
        named.sort();
        named
    };
    assert_eq!(
        needing_attention(&report),
        attention(
            "converted_by_the_gateway",
            &[&dollars_charge, &euros_charge]
        )
    );

    assert_eq!(reconcile(&app)["fees_posted"], 2);
    assert_eq!(reconcile(&app)["fees_posted"], 0);
    // 2,000 usd settled as 1,800 eur, the fee charged on those.
    assert_eq!(
        postings(&app, dollars),
        vec![
            posting(
                "capture",
                &[("gateway:usd", 2000), ("platform:unassigned:usd", -2000)]
            ),
            posting(
                "fx",
                &[
                    ("fx:eur", -1800),
                    ("fx:usd", 2000),
                    ("gateway:eur", 1800),
                    ("gateway:usd", -2000)
                ]
            ),
            posting(
                "fee",
                &[
                    ("gateway:eur", -fee_of(1800)),
                    ("platform:fees:eur", fee_of(1800))
                ]
            ),
        ]
    );
    // 2,000 eur settled as 2,200 usd.
    assert_eq!(
        postings(&app, euros)[1..],
        [
            posting(
                "fx",
                &[
                    ("fx:eur", 2000),
                    ("fx:usd", -2200),
                    ("gateway:eur", -2000),
                    ("gateway:usd", 2200)
                ]
            ),
            posting(
                "fee",
                &[
                    ("gateway:usd", -fee_of(2200)),
                    ("platform:fees:usd", fee_of(2200))
                ]
            ),
        ]
    );

    // The gateway takes the refund in the currency it settled in (550 usd).
    app.post_refund(euros, "refund", r#"{"amount_cents": 500}"#)
        .await
        .assert_status(201);
    let refund = text(&app, "SELECT gateway_refund_id AS value FROM refunds");
    let (passed, report) = check(&app, &[]);
    assert!(passed, "{report}");
    assert_eq!(violations(&report), named(&[]), "{report}");
    assert_eq!(report["fees_pending"], json!([]));
    let mut expected = attention(
        "settled_in_another_currency",
        &[&dollars_charge, &euros_charge],
    );
    expected.extend(attention("converted_by_the_gateway", &[&refund]));
    expected.sort();
    assert_eq!(needing_attention(&report), expected);

    // The gateway accounts took the settled amounts less their fees; the
    // refund is posted in the ride's currency, which `needs_attention`
    // names.
    let balance = balances(&app);
    assert_eq!(balance("gateway:eur"), 1800 - fee_of(1800) - 500);
    assert_eq!(balance("gateway:usd"), 2200 - fee_of(2200));
    assert_eq!(balance("fx:usd"), 2000 - 2200);

    // A currency no ride is in gets its accounts with its first conversion.
    use diesel::RunQueryDsl;
    diesel::sql_query(format!(
        "INSERT INTO charges (id, ride_id, amount_cents, currency, balance_transaction_id, \
         fee_cents, settled_currency, settled_cents) \
         VALUES ('ch_cad', {}, 1000, 'usd', 'txn_cad', 70, 'cad', 1370)",
        dollars.row_key()
    ))
    .execute(&mut app.db())
    .unwrap();
    assert_eq!(
        app.count("ledger_accounts WHERE currency = 'cad'"),
        3,
        "gateway, fx and fees"
    );
    assert_eq!(
        app.count("ledger_transactions WHERE source LIKE '%cad%'"),
        3,
        "capture, conversion and fee"
    );
}
