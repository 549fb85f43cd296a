//! What the rides hold when the ledger starts is posted as opening
//! transactions: captured into the gateway, refunds back out, nothing for
//! a hold; their fees, when backfilled.

use diesel::RunQueryDsl;
use serde_json::json;

use crate::common::app::spawn_app;
use crate::common::database::{count, revert_through};
use crate::common::server_process::run_json;
use crate::ledger::{assert_exact, fee_of, posting, postings};

#[tokio::test]
async fn rides_holding_money_when_the_ledger_starts_get_opening_transactions() {
    let app = spawn_app().await;
    let paid = app.paid_ride("paid").await;
    app.post_refund(paid, "refund", r#"{"amount_cents": 500}"#)
        .await
        .assert_status(201);
    app.held_ride("held", "pm_card_visa").await;
    let captured: i64 = diesel::dsl::sql::<diesel::sql_types::BigInt>(
        "SELECT sum(amount_captured_cents)::bigint FROM rides",
    )
    .get_result(&mut app.db())
    .unwrap();

    // The upgrade that brings the ledger in, over these rides.
    let mut conn = app.db();
    revert_through(&mut conn, "000035");
    ridepay::db::run_migrations(&mut conn).unwrap();

    // The capture as an opening; the refund, made at the gateway, as itself.
    assert_eq!(
        count(&mut conn, "ledger_transactions WHERE kind = 'opening'"),
        1
    );
    assert_eq!(
        count(
            &mut conn,
            "ledger_transactions WHERE kind = 'refund' AND source LIKE 're_%:refund'"
        ),
        1
    );
    let balance = |code: &str| -> i64 {
        diesel::dsl::sql::<diesel::sql_types::BigInt>(&format!(
            "SELECT coalesce(sum(e.amount_cents), 0)::bigint FROM ledger_entries e \
             JOIN ledger_accounts a ON a.id = e.account_id WHERE a.code = '{code}'"
        ))
        .get_result(&mut app.db())
        .unwrap()
    };
    assert_eq!(balance("gateway:usd"), captured - 500);
    assert_eq!(balance("platform:unassigned:usd"), -(captured - 500));
}

/// The fees of what was captured before the ledger are not in its opening:
/// `ridepay ledger backfill-fees` reads them from the charges' balance
/// transactions and posts each once, however often it runs.
#[tokio::test]
async fn the_fees_of_charges_before_the_ledger_are_backfilled_once() {
    let app = spawn_app().await;
    let paid = app.paid_ride("paid").await;
    app.held_ride("held", "pm_card_visa").await;
    let mut conn = app.db();
    revert_through(&mut conn, "000035");
    ridepay::db::run_migrations(&mut conn).unwrap();
    assert_eq!(
        count(&mut conn, "ledger_transactions WHERE kind = 'fee'"),
        0
    );

    let backfill = || run_json(&app.database_url, &["ledger", "backfill-fees"], &[]);
    let first = backfill();
    let again = backfill();

    assert_eq!(
        (&first["rides"], &first["fees_posted"]),
        (&json!(1), &json!(1)),
        "{first}"
    );
    assert_eq!(again["fees_posted"], 0, "{again}");
    let fee = fee_of(2000);
    assert_eq!(
        postings(&app, paid)[1],
        posting("fee", &[("gateway:usd", -fee), ("platform:fees:usd", fee)])
    );
    assert_exact(&app, "after the backfill");
}
