//! The gateway doubles' authentication pages, the simulated gateway's
//! (served by ridepay) and the fake Stripe's: what the rider is asked, the
//! answer taken once, and the browser sent back to the return page with
//! Stripe's query parameters.

use diesel::{Connection, RunQueryDsl};
use ridepay::config::SimulatedGatewaySettings;
use ridepay::payments::{
    CaptureMethod, GatewayError, IntentStatus, PaymentGateway, PaymentIntent, StripeGateway,
};
use ridepay_doubles::SimulatedGateway;

use crate::common::app::{spawn_app, TestApp};
use crate::common::gateway::{intent_request, spawn_fake_gateway, stripe_settings};

/// A gateway and the page its PaymentIntents send riders to: the
/// simulated gateway's, served by ridepay, or the fake Stripe's own (reached
/// through the Stripe client), the fake kept alive alongside.
struct PageUnderTest {
    gateway: Box<dyn PaymentGateway>,
    page: String,
    /// The database holding its PaymentIntents.
    records: String,
    _fake: Option<ridepay_doubles::fake_stripe::FakeGateway>,
}

fn simulated(app: &TestApp) -> PageUnderTest {
    let pool = crate::common::settings::pool(&app.database_url);
    let page = format!("{}/simulated-gateway/authenticate", app.address);
    PageUnderTest {
        gateway: Box::new(
            SimulatedGateway::new(pool, SimulatedGatewaySettings::default())
                .with_authentication_page(page.clone()),
        ),
        page,
        records: app.database_url.clone(),
        _fake: None,
    }
}

fn fake() -> PageUnderTest {
    let (fake, records) = spawn_fake_gateway(|_| {});
    PageUnderTest {
        gateway: Box::new(StripeGateway::new(&stripe_settings(&fake)).unwrap()),
        page: format!("{}/fake/authenticate", fake.url()),
        records,
        _fake: Some(fake),
    }
}

fn pages(app: &TestApp) -> [PageUnderTest; 2] {
    [simulated(app), fake()]
}

fn waiting(app: &TestApp, under_test: &PageUnderTest, key: &str) -> PaymentIntent {
    let mut request = intent_request(key, "pm_card_authenticationRequired", CaptureMethod::Manual);
    request.return_url = format!("{}/payments/return?from=test", app.address);
    under_test.gateway.create_intent(&request).unwrap()
}

fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn answer(
    under_test: &PageUnderTest,
    intent: &PaymentIntent,
    outcome: &str,
) -> reqwest::Response {
    browser()
        .post(&under_test.page)
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
    for under_test in pages(&app) {
        let intent = waiting(&app, &under_test, "confirm");
        let page_url = intent.next_action.clone().unwrap().url.unwrap();

        let page = browser().get(&page_url).send().await.unwrap();
        let content_type = page.headers()["content-type"].to_str().unwrap().to_owned();
        let html = page.text().await.unwrap();
        let confirmed = answer(&under_test, &intent, "complete").await;
        let again = answer(&under_test, &intent, "fail").await;

        assert!(page_url.starts_with(&under_test.page), "{page_url}");
        assert!(content_type.starts_with("text/html"), "{content_type}");
        assert!(
            html.contains("€20.00") && html.contains("Confirm"),
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
        let now = under_test
            .gateway
            .retrieve_intent(&intent.id)
            .unwrap()
            .unwrap();
        assert_eq!(
            (now.status, now.amount_capturable_cents),
            (IntentStatus::RequiresCapture, 2000)
        );
    }
}

#[tokio::test]
async fn a_refusal_fails_the_payment_and_a_wrong_secret_shows_nothing() {
    let app = spawn_app().await;
    for under_test in pages(&app) {
        let intent = waiting(&app, &under_test, "refuse");

        let stranger = browser()
            .get(format!(
                "{}?payment_intent={}&client_secret=pi_x_secret_guess",
                under_test.page, intent.id
            ))
            .send()
            .await
            .unwrap();
        let (stranger_status, stranger_html) = (stranger.status(), stranger.text().await.unwrap());
        let refused = answer(&under_test, &intent, "fail").await;

        assert_eq!(stranger_status, 404);
        assert!(!stranger_html.contains("20.00"), "{stranger_html}");
        assert!(
            location(&refused).ends_with("&redirect_status=failed"),
            "{}",
            location(&refused)
        );
        assert_eq!(
            under_test
                .gateway
                .retrieve_intent(&intent.id)
                .unwrap()
                .unwrap()
                .status,
            IntentStatus::RequiresPaymentMethod
        );
    }
}

/// The headers a page is sent with, as `name: value` lines.
fn page_headers(response: &reqwest::Response) -> String {
    [
        "content-security-policy",
        "x-frame-options",
        "x-content-type-options",
        "referrer-policy",
    ]
    .iter()
    .map(|name| {
        let value = response.headers().get(*name).map(|v| v.to_str().unwrap());
        format!("{name}: {}", value.unwrap_or("(none)"))
    })
    .collect::<Vec<_>>()
    .join("\n")
}

#[tokio::test]
async fn every_page_loads_nothing_is_never_framed_or_sniffed_and_sends_no_referer() {
    let app = spawn_app().await;
    let policy = |form_action: &str| {
        format!(
            "content-security-policy: default-src 'none'; form-action {form_action}; \
             frame-ancestors 'none'; base-uri 'none'\nx-frame-options: DENY\n\
             x-content-type-options: nosniff\nreferrer-policy: no-referrer"
        )
    };
    for under_test in pages(&app) {
        let intent = waiting(&app, &under_test, "headers");
        let question = browser()
            .get(intent.next_action.clone().unwrap().url.unwrap())
            .send()
            .await
            .unwrap();
        let not_valid = browser()
            .get(format!(
                "{}?payment_intent=pi_x&client_secret=x",
                under_test.page
            ))
            .send()
            .await
            .unwrap();

        // Its form posts to itself, and the answer goes to the return page.
        assert_eq!(
            page_headers(&question),
            policy(&format!("'self' {}", app.address))
        );
        assert_eq!(page_headers(&not_valid), policy("'self'"));
    }
    let return_page = browser()
        .get(format!(
            "{}/payments/return?payment_intent=pi_x&payment_intent_client_secret=x",
            app.address
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(page_headers(&return_page), policy("'self'"));
}

#[tokio::test]
async fn a_return_url_that_is_not_plain_http_is_refused_and_none_reaches_a_header() {
    let app = spawn_app().await;
    let injected = "https://evil.example/x\r\nSet-Cookie: pwned=1";
    for under_test in pages(&app) {
        for (i, bad) in [injected, "javascript:alert(1)", "/payments/return"]
            .into_iter()
            .enumerate()
        {
            let mut request = intent_request(
                &format!("bad-return-url-{i}"),
                "pm_card_authenticationRequired",
                CaptureMethod::Manual,
            );
            request.return_url = bad.to_owned();

            let refused = under_test.gateway.create_intent(&request).unwrap_err();

            assert!(
                matches!(&refused, GatewayError::Rejected { message } if message.contains("return_url must be an http or https URL")),
                "{refused:?}"
            );
        }
        // One that got into the store anyway (the doubles' tables are
        // shared): the answer sends the browser nowhere.
        let intent = waiting(&app, &under_test, "stored");
        diesel::sql_query("UPDATE simulated_payment_intents SET return_url = $1 WHERE id = $2")
            .bind::<diesel::sql_types::Text, _>(injected)
            .bind::<diesel::sql_types::Text, _>(&intent.id)
            .execute(&mut diesel::PgConnection::establish(&under_test.records).unwrap())
            .unwrap();

        let answered = answer(&under_test, &intent, "complete").await;

        assert_eq!(answered.status(), 200);
        assert!(answered.headers().get("location").is_none());
        assert!(answered.headers().get("set-cookie").is_none());
    }
}
