//! The simulated gateway's authentication page, served by ridepay: what the
//! rider is asked, the answer taken once, and the browser sent back to the
//! return page with Stripe's query parameters.

use ridepay::config::{Settings, SimulatedGatewaySettings};
use ridepay::doubles::SimulatedGateway;
use ridepay::payments::{CaptureMethod, IntentGateway, IntentStatus, PaymentIntent};

use crate::helpers::{intent_request, spawn_app, TestApp};

/// The simulated gateway as the app's own, on its database and its page.
fn gateway(app: &TestApp) -> SimulatedGateway {
    let pool = ridepay::db::build_pool(
        &app.database_url,
        &Settings::for_database(&app.database_url),
    );
    SimulatedGateway::new(pool, SimulatedGatewaySettings::default())
        .with_authentication_page(format!("{}/simulated-gateway/authenticate", app.address))
}

fn waiting(app: &TestApp, gateway: &SimulatedGateway, key: &str) -> PaymentIntent {
    let mut request = intent_request(key, "pm_card_authenticationRequired", CaptureMethod::Manual);
    request.return_url = format!("{}/payments/return?from=test", app.address);
    gateway.create_intent(&request).unwrap()
}

fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn answer(app: &TestApp, intent: &PaymentIntent, outcome: &str) -> reqwest::Response {
    browser()
        .post(format!("{}/simulated-gateway/authenticate", app.address))
        .form(&[
            ("payment_intent", intent.id.as_str()),
            ("client_secret", intent.client_secret.as_deref().unwrap()),
            ("outcome", outcome),
        ])
        .send()
        .await
        .unwrap()
}

fn location(response: &reqwest::Response) -> String {
    response.headers()["location"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_rider_confirms_once_and_is_sent_back_with_stripes_parameters() {
    let app = spawn_app().await;
    let gateway = gateway(&app);
    let intent = waiting(&app, &gateway, "confirm");
    let page_url = intent.next_action.clone().unwrap().url.unwrap();

    let page = browser().get(&page_url).send().await.unwrap();
    let content_type = page.headers()["content-type"].to_str().unwrap().to_owned();
    let html = page.text().await.unwrap();
    let confirmed = answer(&app, &intent, "complete").await;
    let again = answer(&app, &intent, "fail").await;

    assert!(content_type.starts_with("text/html"), "{content_type}");
    assert!(
        html.contains("20.00 EUR") && html.contains("Confirm"),
        "{html}"
    );
    assert_eq!(confirmed.status(), 303);
    let secret = intent.client_secret.clone().unwrap();
    assert_eq!(
        location(&confirmed),
        format!(
            "{}/payments/return?from=test&payment_intent={}&payment_intent_client_secret={secret}&redirect_status=succeeded",
            app.address, intent.id
        )
    );
    // The second answer changes nothing.
    assert_eq!(location(&again), location(&confirmed));
    let now = gateway.retrieve_intent(&intent.id).unwrap().unwrap();
    assert_eq!(
        (now.status, now.amount_capturable_cents),
        (IntentStatus::RequiresCapture, 2000)
    );
}

#[tokio::test]
async fn a_refusal_fails_the_payment_and_a_wrong_secret_shows_nothing() {
    let app = spawn_app().await;
    let gateway = gateway(&app);
    let intent = waiting(&app, &gateway, "refuse");

    let stranger = browser()
        .get(format!(
            "{}/simulated-gateway/authenticate?payment_intent={}&client_secret=pi_x_secret_guess",
            app.address, intent.id
        ))
        .send()
        .await
        .unwrap();
    let (stranger_status, stranger_html) = (stranger.status(), stranger.text().await.unwrap());
    let refused = answer(&app, &intent, "fail").await;

    assert_eq!(stranger_status, 404);
    assert!(!stranger_html.contains("20.00"), "{stranger_html}");
    assert!(
        location(&refused).ends_with("&redirect_status=failed"),
        "{}",
        location(&refused)
    );
    assert_eq!(
        gateway.retrieve_intent(&intent.id).unwrap().unwrap().status,
        IntentStatus::RequiresPaymentMethod
    );
}
