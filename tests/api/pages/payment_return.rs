//! `GET /payments/return`, where the rider's browser lands after
//! authenticating: it verifies with the gateway before changing anything,
//! applies the transition once whatever the order of reloads, events and
//! concurrent callbacks, trusts nothing in the query but the names, and
//! never shows an error that invites paying again.

use std::time::Duration;

use ridepay::config::{GatewayKind, StripeSettings};
use ridepay_doubles::intents::{self, Authentication, IntentSettings};
use serde_json::Value;

use crate::common::app::{spawn_app, spawn_server, Answer, TestApp};
use crate::common::ids::Id;

fn settings() -> IntentSettings {
    IntentSettings {
        double: ridepay_doubles::events::Double::Simulated,
        authentication_page: "http://127.0.0.1/unused".to_owned(),
        authorization_ttl: Duration::from_secs(3600),
        extended_authorization_ttl: Duration::from_secs(3600),
    }
}

fn secret(ride: &Value) -> String {
    ride["next_action"]["client_secret"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn intent(ride: &Value) -> String {
    ride["payment_intent_id"].as_str().unwrap().to_owned()
}

/// The rider answers the bank's question, as on the authentication page.
fn authenticate(app: &TestApp, ride: &Value, outcome: Authentication) {
    intents::authenticate(
        &mut app.db(),
        &intent(ride),
        &secret(ride),
        outcome,
        &settings(),
    )
    .unwrap()
    .unwrap();
}

async fn visit(app: &TestApp, address: &str, ride: &Value, secret: &str, redirect: &str) -> Answer {
    let response = app
        .client
        .get(format!("{address}/payments/return"))
        .query(&[
            ("payment_intent", intent(ride).as_str()),
            ("payment_intent_client_secret", secret),
            ("redirect_status", redirect),
        ])
        .send()
        .await
        .unwrap();
    Answer::read(response).await
}

fn text(answer: &Answer) -> String {
    String::from_utf8(answer.body.clone()).unwrap()
}

#[tokio::test]
async fn the_return_page_verifies_with_the_gateway_and_applies_the_authentication_once() {
    let app = spawn_app().await;
    let ride = app.waiting_ride("3ds").await;
    authenticate(&app, &ride, Authentication::Completed);

    let first = visit(&app, &app.address, &ride, &secret(&ride), "succeeded").await;
    let again = visit(&app, &app.address, &ride, &secret(&ride), "succeeded").await;

    assert_eq!((first.status, again.status), (200, 200));
    assert_eq!(
        first.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(
        text(&first).contains("Your ride is booked"),
        "{}",
        text(&first)
    );
    assert!(text(&first).contains("€20.00") || text(&first).contains("$20.00"));
    assert_eq!(again.body, first.body);
    let now = app.ride(Id::of(&ride["id"])).await;
    assert_eq!(
        (
            now["status"].as_str(),
            now["amount_authorized_cents"].as_i64()
        ),
        (Some("authorized"), Some(2000))
    );
    assert_eq!(now["next_action"], Value::Null);
    // The gateway's own event comes too, and changes nothing more.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(app.transitions(&ride, "ride.authorized"), 1);
}

#[tokio::test]
async fn concurrent_callbacks_leave_one_transition() {
    let app = spawn_app().await;
    let ride = app.waiting_ride("3ds").await;
    authenticate(&app, &ride, Authentication::Completed);
    let secret = secret(&ride);

    let answers = futures_util::future::join_all(
        (0..8).map(|_| visit(&app, &app.address, &ride, &secret, "succeeded")),
    )
    .await;

    assert!(answers.iter().all(|answer| answer.status == 200));
    assert!(answers.iter().all(|answer| answer.body == answers[0].body));
    assert_eq!(app.transitions(&ride, "ride.authorized"), 1);
}

#[tokio::test]
async fn the_query_is_never_trusted() {
    let app = spawn_app().await;
    let ride = app.waiting_ride("3ds").await;

    // Not authenticated yet, whatever redirect_status claims.
    let claimed = visit(&app, &app.address, &ride, &secret(&ride), "succeeded").await;
    assert_eq!(claimed.status, 200);
    assert!(
        text(&claimed).contains("not confirmed yet"),
        "{}",
        text(&claimed)
    );
    assert_eq!(
        app.ride(Id::of(&ride["id"])).await["status"],
        "requires_action"
    );
    // A wrong secret, or an intent ridepay does not know: a 404 page.
    let wrong = visit(&app, &app.address, &ride, "pi_x_secret_forged", "succeeded").await;
    assert_eq!(wrong.status, 404);
    assert!(text(&wrong).contains("Nothing was charged"));
    let bare = app
        .client
        .get(format!("{}/payments/return", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status(), 404);
    // The rider fails the authentication: the page says so, without an
    // invitation to pay again, and reporting success in the query changes
    // nothing.
    authenticate(&app, &ride, Authentication::Failed);
    let failed = visit(&app, &app.address, &ride, &secret(&ride), "succeeded").await;
    assert_eq!(failed.status, 200);
    assert!(
        text(&failed).contains("did not go through"),
        "{}",
        text(&failed)
    );
    assert_eq!(
        app.ride(Id::of(&ride["id"])).await["status"],
        "payment_declined"
    );
}

#[tokio::test]
async fn a_gateway_that_cannot_be_asked_gets_a_503_page_and_nothing_changes() {
    let app = spawn_app().await;
    let ride = app.waiting_ride("3ds").await;
    // An instance whose gateway is down: Stripe at a closed port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let cut_off = spawn_server(&app.database_url, |s| {
        s.gateway.kind = GatewayKind::Stripe;
        s.gateway.stripe = StripeSettings {
            api_key: Some("sk_test_unreachable".to_owned().into()),
            api_base: format!("http://127.0.0.1:{port}"),
            ..StripeSettings::default()
        };
        s.completer.enabled = false;
    })
    .await;

    let page = visit(&app, &cut_off, &ride, &secret(&ride), "succeeded").await;

    assert_eq!(page.status, 503);
    assert!(page.header("retry-after").is_some());
    assert!(
        text(&page).contains("Confirming your payment"),
        "{}",
        text(&page)
    );
    let now = app.ride(Id::of(&ride["id"])).await;
    assert_eq!(
        (now["status"].as_str(), &now["next_action"]),
        (Some("requires_action"), &ride["next_action"])
    );
}
