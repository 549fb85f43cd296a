//! `POST /webhooks/stripe/connect`: Connect events, verified under their
//! own secret, recorded once; an account's events lead to the account
//! fetched, whose `transfers` capability sets the driver's status. The
//! other mode's events, other types and unknown accounts are `ignored`.

use serde_json::{json, Value};

use super::{account_of, follows, registered};
use crate::common::app::{create_platform_user, spawn_app_with, TestApp};
use crate::common::ids::Id;
use ridepay::payments::stripe::signature::sign;
use ridepay_doubles::accounts;

const CONNECT_SECRET: &str = "whsec_ridepay_connect_suite";

fn event(id: &str, event_type: &str, account: &str, livemode: bool) -> String {
    json!({
        "id": id,
        "object": "event",
        "type": event_type,
        "account": account,
        "livemode": livemode,
        "created": chrono::Utc::now().timestamp(),
        "data": {"object": {"id": account, "object": "account"}},
    })
    .to_string()
}

async fn deliver(app: &TestApp, body: &str, secret: &str) -> (u16, Value) {
    let signature = sign(secret, chrono::Utc::now().timestamp(), body.as_bytes());
    let answer = app
        .client
        .post(format!("{}/webhooks/stripe/connect", app.address))
        .header("Content-Type", "application/json")
        .header("Stripe-Signature", signature)
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap_or(Value::Null))
}

/// The gateway stops (or allows again) transfers to `account`, as it does
/// when it wants more of the driver (or has it).
fn gateway_sets_transfers(app: &TestApp, account: &str, status: &str) {
    let mut conn = app.db();
    match status {
        "active" => accounts::activate(&mut conn, account),
        _ => accounts::restrict(&mut conn, account),
    }
    .unwrap();
}

async fn status_of(app: &TestApp, platform_key: &str, driver: Id) -> Value {
    app.get_as(platform_key, &format!("/api/drivers/{driver}"))
        .await
        .json()["status"]
        .clone()
}

#[tokio::test]
async fn account_events_move_a_driver_between_active_and_restricted_once_each() {
    // Only the events posted here: the simulated gateway's own stay unsent.
    let app = spawn_app_with(|s| {
        s.gateway.stripe.connect_webhook_secret = Some(CONNECT_SECRET.to_owned().into());
        s.gateway.simulated.events_enabled = false;
    })
    .await;
    let platform = create_platform_user(&app.database_url);
    let (driver, _) = registered(&app, &platform, "ada").await;
    let account = account_of(&app, &platform.api_key, driver).await;

    // Nothing changed at the gateway: applied, still onboarding.
    let (status, body) = deliver(
        &app,
        &event("evt_1", "account.updated", &account, false),
        CONNECT_SECRET,
    )
    .await;
    assert_eq!((status, body["result"].clone()), (200, json!("applied")));
    assert_eq!(
        status_of(&app, &platform.api_key, driver).await,
        "onboarding"
    );

    gateway_sets_transfers(&app, &account, "active");
    let activated = event("evt_2", "capability.updated", &account, false);
    let (_, body) = deliver(&app, &activated, CONNECT_SECRET).await;
    assert_eq!(body["result"], "applied");
    assert_eq!(status_of(&app, &platform.api_key, driver).await, "active");
    // Redelivered: nothing more.
    let (_, body) = deliver(&app, &activated, CONNECT_SECRET).await;
    assert_eq!(body["result"], "duplicate");

    gateway_sets_transfers(&app, &account, "inactive");
    // The other mode's event is not this installation's to act on.
    let (_, body) = deliver(
        &app,
        &event("evt_3", "account.updated", &account, true),
        CONNECT_SECRET,
    )
    .await;
    assert_eq!(body["result"], "ignored");
    assert_eq!(status_of(&app, &platform.api_key, driver).await, "active");
    let (_, body) = deliver(
        &app,
        &event("evt_4", "account.updated", &account, false),
        CONNECT_SECRET,
    )
    .await;
    assert_eq!(body["result"], "applied");
    assert_eq!(
        status_of(&app, &platform.api_key, driver).await,
        "restricted"
    );

    gateway_sets_transfers(&app, &account, "active");
    let (_, body) = deliver(
        &app,
        &event("evt_5", "account.updated", &account, false),
        CONNECT_SECRET,
    )
    .await;
    assert_eq!(body["result"], "applied");
    assert_eq!(status_of(&app, &platform.api_key, driver).await, "active");

    // Other types, and accounts that are no driver's, change nothing.
    for (id, event_type, of) in [
        ("evt_6", "payment_intent.succeeded", account.as_str()),
        (
            "evt_7",
            "account.application.deauthorized",
            account.as_str(),
        ),
        ("evt_8", "account.updated", "acct_nobodys"),
    ] {
        let (status, body) = deliver(&app, &event(id, event_type, of, false), CONNECT_SECRET).await;
        assert_eq!(
            (status, body["result"].clone()),
            (200, json!("ignored")),
            "{id}"
        );
    }
    // Signed with another secret (the platform endpoint's, say): refused.
    let (status, _) = deliver(
        &app,
        &event("evt_9", "account.updated", &account, false),
        "whsec_other",
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(app.count("stripe_events WHERE id = 'evt_9'"), 0);
}

#[tokio::test]
async fn without_its_secret_the_connect_endpoint_refuses_every_event() {
    let app = spawn_app_with(|_| {}).await;
    let (status, body) = deliver(
        &app,
        &event("evt_1", "account.updated", "acct_1", false),
        CONNECT_SECRET,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["type"]
            .as_str()
            .map(|t| t.ends_with("invalid-signature")),
        Some(true),
        "{body}"
    );
    assert_eq!(app.count("stripe_events"), 0);
}

/// The simulated gateway's own `account.updated` reach the same handling
/// in-process: the driver follows the account without any event posted.
#[tokio::test]
async fn the_simulated_gateways_account_events_move_the_driver() {
    let app = spawn_app_with(|_| {}).await;
    let platform = create_platform_user(&app.database_url);
    let (driver, _) = registered(&app, &platform, "ada").await;
    let account = account_of(&app, &platform.api_key, driver).await;
    for (status, driver_status) in [
        ("active", "active"),
        ("inactive", "restricted"),
        ("active", "active"),
    ] {
        gateway_sets_transfers(&app, &account, status);
        assert!(follows(&app, &account, driver_status).await, "{status}");
    }
}
