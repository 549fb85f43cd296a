//! Transfers at the gateway that no transfer records (a send that crashed
//! and went again under another key, a duplicate): reconciliation
//! tombstones each, posts it against `platform:suspense` and reverses it
//! once, or leaves it in suspense while the driver's available balance
//! cannot cover it; a transfer the worker is going to record, one a row
//! records, and another installation's are none of its business; and
//! `ledger check` compares each driver's transfers with the gateway's.

use diesel::prelude::*;
use ridepay::config::SimulatedGatewaySettings;
use ridepay::drivers::transfer_keys::transfer_key;
use ridepay::drivers::transfers::make_due;
use ridepay::payments::{CreateTransfer, Transfer, GENERATION, INSTALLATION, RIDEPAY_KEY};
use ridepay::public_ids::RidePublicId;
use ridepay::schema::{stray_transfers, transfers};
use ridepay_doubles::accounts;

use super::{account_of, active_driver};
use crate::common::app::{create_platform_user, spawn_app, TestApp, TestUser};
use crate::common::gateway::{reconcile, reconcile_with};
use crate::common::ids::Id;
use crate::common::keys::service_context;
use crate::common::settings::pool;
use crate::ledger::{assert_exact, posting, postings_without_ride};

/// A driver owed 1,600 of a paid ride of 2,000 assigned to them: the
/// driver, their account and the ride.
async fn owed(app: &TestApp, platform: &TestUser) -> (Id, String, Id) {
    let driver = active_driver(app, platform, "ada").await;
    let account = account_of(app, &platform.api_key, driver).await;
    let ride = app.paid_ride("paid").await;
    app.post_assign_driver(platform, ride, driver, "assign")
        .await
        .assert_status(200);
    (driver, account, ride)
}

/// A driver paid what they are owed, and the charge of a second paid ride
/// no driver drives: what a stray is made from.
async fn paid_and_a_charge(app: &TestApp, platform: &TestUser) -> (Id, String, String) {
    let (driver, account, _) = owed(app, platform).await;
    assert_eq!(make_due(&app.service_context(), 10).unwrap().made, 1);
    let other = app.paid_ride("other").await;
    (driver, account, charge_of(app, other))
}

fn charge_of(app: &TestApp, ride: Id) -> String {
    #[derive(QueryableByName)]
    struct Charge {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
    }
    diesel::sql_query(format!(
        "SELECT id FROM charges WHERE ride_id = {}",
        ride.row_key()
    ))
    .get_result::<Charge>(&mut app.db())
    .unwrap()
    .id
}

/// A transfer made directly at the gateway, with the metadata ridepay
/// sends: under `installation`, naming `ridepay_key`.
fn made_at_the_gateway(
    app: &TestApp,
    account: &str,
    charge: &str,
    installation: &str,
    ridepay_key: &str,
    cents: i64,
) -> Transfer {
    app.service_context()
        .gateway
        .create_transfer(&CreateTransfer {
            idempotency_key: format!("made-up-{ridepay_key}-{installation}"),
            amount_cents: cents,
            currency: "usd".to_owned(),
            destination: account.to_owned(),
            source_transaction: charge.to_owned(),
            metadata: vec![
                (INSTALLATION.to_owned(), installation.to_owned()),
                (RIDEPAY_KEY.to_owned(), ridepay_key.to_owned()),
                (GENERATION.to_owned(), "0".to_owned()),
            ],
        })
        .unwrap()
}

/// A stray made under the made-up key `ridepay_key`.
fn stray(app: &TestApp, account: &str, charge: &str, ridepay_key: &str, cents: i64) -> Transfer {
    let installation = app.service_context().installation_id.to_string();
    made_at_the_gateway(app, account, charge, &installation, ridepay_key, cents)
}

/// The tombstones: (transfer, status, generation, reversal made).
fn tombstones(app: &TestApp) -> Vec<(String, String, i16, bool)> {
    stray_transfers::table
        .order(stray_transfers::transfer_id)
        .select((
            stray_transfers::transfer_id,
            stray_transfers::status,
            stray_transfers::generation,
            stray_transfers::reversal_id.is_not_null(),
        ))
        .load(&mut app.db())
        .unwrap()
}

/// The reversals the gateway made: (transfer, amount, generation named).
fn reversals(app: &TestApp) -> Vec<(String, i64, String)> {
    use ridepay_doubles::schema::simulated_transfer_reversals as made;
    made::table
        .order(made::created_at)
        .select((
            made::transfer,
            made::amount_cents,
            made::metadata.retrieve_as_text(GENERATION),
        ))
        .load(&mut app.db())
        .unwrap()
}

/// What `ridepay ledger check` finds, in the database and against the
/// gateway: (invariant, subject).
fn violations(app: &TestApp) -> Vec<(String, String)> {
    use ridepay::ledger::{against_gateway, check};
    let context = app.service_context();
    let mut conn = app.db();
    let since = check::since(None);
    let mut report = check::check(&mut conn, since, std::time::Duration::from_secs(3600)).unwrap();
    against_gateway::compare(&mut conn, context.gateway.as_ref(), since, &mut report).unwrap();
    report
        .violations
        .into_iter()
        .map(|violation| (violation.invariant.to_owned(), violation.subject))
        .collect()
}

#[tokio::test]
async fn a_stray_transfer_is_tombstoned_reversed_once_and_posted_both_ways() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let (driver, account, charge) = paid_and_a_charge(&app, &platform).await;
    let made = stray(&app, &account, &charge, "made-up", 300);
    accounts::make_available(&mut app.db(), &account).unwrap();

    // Before reconciliation the gateway shows 300 more than the ledger.
    assert_eq!(
        violations(&app),
        [("driver_disagrees".to_owned(), format!("{driver}:usd"))]
    );
    let first = reconcile(&app);
    let second = reconcile(&app);

    assert_eq!(
        (
            first.strays_found,
            first.strays_reversed,
            first.strays_in_suspense
        ),
        (1, 1, 0),
        "{first:?}"
    );
    assert_eq!(
        (second.strays_found, second.strays_reversed),
        (0, 0),
        "{second:?}"
    );
    assert_eq!(
        tombstones(&app),
        [(made.id.clone(), "reversed".to_owned(), 0, true)]
    );
    assert_eq!(reversals(&app), [(made.id, 300, "0".to_owned())]);
    // The driver's own transfer, which a row records, is left alone.
    assert_eq!(app.count("transfers WHERE status = 'paid'"), 1);
    assert_eq!(
        postings_without_ride(&app),
        [
            posting(
                "stray_transfer",
                &[("gateway:usd", -300), ("platform:suspense:usd", 300)]
            ),
            posting(
                "stray_reversal",
                &[("gateway:usd", 300), ("platform:suspense:usd", -300)]
            ),
        ]
    );
    assert_eq!(violations(&app), []);
    assert_exact(&app, "a stray reversed");
}

#[tokio::test]
async fn a_stray_the_drivers_balance_cannot_cover_stays_in_suspense_until_it_can() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let (_, account, charge) = paid_and_a_charge(&app, &platform).await;
    accounts::make_available(&mut app.db(), &account).unwrap();
    accounts::pay_out(&mut app.db(), &account).unwrap();
    let made = stray(&app, &account, &charge, "made-up", 300);

    let short = reconcile(&app);
    let still_short = reconcile(&app);
    let suspended = tombstones(&app);
    let in_suspense = postings_without_ride(&app);
    accounts::make_available(&mut app.db(), &account).unwrap();
    let covered = reconcile(&app);

    assert_eq!(
        (
            short.strays_found,
            short.strays_in_suspense,
            short.strays_reversed
        ),
        (1, 1, 0),
        "{short:?}"
    );
    assert_eq!(
        (still_short.strays_in_suspense, still_short.strays_reversed),
        (1, 0)
    );
    assert_eq!(
        suspended,
        [(made.id.clone(), "balance_insufficient".to_owned(), 2, false)]
    );
    assert_eq!(
        in_suspense,
        [posting(
            "stray_transfer",
            &[("gateway:usd", -300), ("platform:suspense:usd", 300)]
        )]
    );
    assert_eq!(
        (covered.strays_reversed, covered.strays_in_suspense),
        (1, 0),
        "{covered:?}"
    );
    // Each refusal proved nothing was made: the reversal went under the
    // next generation's key.
    assert_eq!(reversals(&app), [(made.id.clone(), 300, "2".to_owned())]);
    assert_eq!(
        tombstones(&app),
        [(made.id, "reversed".to_owned(), 2, true)]
    );
    assert_eq!(violations(&app), []);
    assert_exact(&app, "a stray reversed once covered");
}

/// A dry run counts the stray and changes nothing. A reversal whose answer
/// was lost is sent again under its key; one answered with a 500 the
/// gateway saved (having acted or not) is looked for in the transfer's
/// reversals, and sent under the next key only if absent. One reversal,
/// whatever happened.
#[tokio::test]
async fn a_strays_reversal_is_made_once_through_lost_and_saved_answers() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let (_, account, charge) = paid_and_a_charge(&app, &platform).await;
    let lost = stray(&app, &account, &charge, "made-up", 300);
    accounts::make_available(&mut app.db(), &account).unwrap();

    let dry = reconcile_with(&app, true, |_| {});
    let untouched = (tombstones(&app), postings_without_ride(&app));
    let losing = reconcile_with(&app, false, |settings| {
        settings.gateway.simulated.lost_response_rate = 1.0;
    });
    let after_loss = tombstones(&app);
    let found = reconcile(&app);

    assert_eq!((dry.strays_found, dry.strays_reversed), (1, 0), "{dry:?}");
    assert_eq!(untouched, (vec![], vec![]));
    assert_eq!(
        (
            losing.strays_found,
            losing.strays_reversed,
            losing.unresolved
        ),
        (1, 0, 1),
        "{losing:?}"
    );
    assert_eq!(
        after_loss,
        [(lost.id.clone(), "pending".to_owned(), 0, false)]
    );
    assert_eq!(found.strays_reversed, 1, "{found:?}");
    assert_eq!(reversals(&app), [(lost.id.clone(), 300, "0".to_owned())]);

    let saved = stray(&app, &account, &charge, "made up again", 200);
    accounts::make_available(&mut app.db(), &account).unwrap();
    let saving = reconcile_with(&app, false, |settings| {
        settings.gateway.simulated.saved_error_rate = 1.0;
    });
    let acted = reversals(&app).len() == 2;
    // The saved 500 again, or the reversal found made.
    let replayed = reconcile(&app);

    assert_eq!(saving.unresolved, 1, "{saving:?}");
    assert_eq!(replayed.strays_reversed, usize::from(acted), "{replayed:?}");
    if !acted {
        assert!(tombstones(&app).contains(&(saved.id.clone(), "pending".to_owned(), 1, false)));
        assert_eq!(reconcile(&app).strays_reversed, 1);
    }
    let generation = if acted { "0" } else { "1" };
    assert_eq!(
        reversals(&app),
        [
            (lost.id.clone(), 300, "0".to_owned()),
            (saved.id.clone(), 200, generation.to_owned())
        ]
    );
    assert_eq!(tombstones(&app).len(), 2);
    assert_eq!(violations(&app), []);
    assert_exact(&app, "lost and saved reversals");
}

/// A send whose answer was lost after the gateway made it: its row is not
/// recorded yet and carries its key, so the worker records it, and it is no
/// stray before or after.
#[tokio::test]
async fn a_transfer_the_worker_will_record_is_no_stray_nor_once_recorded() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let (_, account, _) = owed(&app, &platform).await;
    let lost = service_context(
        pool(&app.database_url),
        SimulatedGatewaySettings {
            lost_response_rate: 1.0,
            ..Default::default()
        },
    );
    assert_eq!(make_due(&lost, 10).unwrap().left, 1);
    accounts::make_available(&mut app.db(), &account).unwrap();

    let before = reconcile(&app);
    // The gateway's transfer is the worker's to record: no disagreement.
    let found_before = violations(&app);
    assert_eq!(make_due(&app.service_context(), 10).unwrap().made, 1);
    let after = reconcile(&app);

    assert_eq!(before.strays_found, 0, "{before:?}");
    assert_eq!(found_before, []);
    assert_eq!(after.strays_found, 0, "{after:?}");
    assert_eq!(tombstones(&app), []);
    assert_eq!(reversals(&app), []);
    assert_eq!(violations(&app), []);
}

#[tokio::test]
async fn another_installations_transfer_is_none_of_reconciliations_business() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let (_, account, charge) = paid_and_a_charge(&app, &platform).await;
    let elsewhere = uuid::Uuid::new_v4().to_string();
    made_at_the_gateway(&app, &account, &charge, &elsewhere, "made-up", 300);
    accounts::make_available(&mut app.db(), &account).unwrap();

    let summary = reconcile(&app);

    assert_eq!(summary.strays_found, 0, "{summary:?}");
    assert_eq!(tombstones(&app), []);
    assert_eq!(reversals(&app), []);
    assert_eq!(violations(&app), []);
}

/// A row owed after its transfer was found stray (the row was lost and
/// owed again): the worker does not take the stray for its own, and the
/// database refuses any row's record of it.
#[tokio::test]
async fn no_transfer_records_a_stray() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let (_, account, ride) = owed(&app, &platform).await;
    let context = app.service_context();
    let source_charge = charge_of(&app, ride);
    let key = transfer_key(
        context.installation_id,
        ride.public::<RidePublicId>(),
        &source_charge,
        None,
    );
    let installation = context.installation_id.to_string();
    let made = made_at_the_gateway(&app, &account, &source_charge, &installation, &key, 300);
    diesel::insert_into(stray_transfers::table)
        .values((
            stray_transfers::transfer_id.eq(&made.id),
            stray_transfers::driver_id.eq(transfers::table
                .select(transfers::driver_id)
                .first::<i64>(&mut app.db())
                .unwrap()),
            stray_transfers::amount_cents.eq(300),
            stray_transfers::currency.eq("usd"),
            stray_transfers::ridepay_key.eq(&key),
            stray_transfers::transfer_created_at.eq(made.created),
        ))
        .execute(&mut app.db())
        .unwrap();
    ridepay_doubles::intents::save_failure(&mut app.db(), &format!("ridepay-transfer-{key}-g0"))
        .unwrap();

    let looked_up = make_due(&context, 10).unwrap();
    let sent_again = make_due(&context, 10).unwrap();
    let recorded: Option<String> = transfers::table
        .select(transfers::gateway_transfer_id)
        .first(&mut app.db())
        .unwrap();
    let refused = diesel::update(transfers::table)
        .set(transfers::gateway_transfer_id.eq(&made.id))
        .execute(&mut app.db());

    assert_eq!(looked_up.left, 1, "{looked_up:?}");
    assert_eq!(sent_again.made, 1, "{sent_again:?}");
    let recorded = recorded.unwrap();
    assert_ne!(recorded, made.id);
    assert!(recorded.starts_with("tr_"));
    assert!(refused.unwrap_err().to_string().contains("was found stray"),);
}
