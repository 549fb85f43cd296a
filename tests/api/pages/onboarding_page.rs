//! The simulated gateway's onboarding page, served by ridepay: what the
//! driver is asked, the answer taken once (the account then paid, or left
//! as it was), and the driver sent to the platform's return page, or to
//! its refresh page once the link is spent.

use ridepay::config::SimulatedGatewaySettings;
use ridepay::payments::{Account, AccountLink, CreateAccount, CreateAccountLink, PaymentGateway};
use ridepay_doubles::SimulatedGateway;

use crate::common::app::{spawn_app, TestApp};

/// The simulated gateway, its links to ridepay's page under test.
pub fn gateway(app: &TestApp) -> impl PaymentGateway {
    SimulatedGateway::new(
        crate::common::settings::pool(&app.database_url),
        SimulatedGatewaySettings::default(),
    )
    .with_onboarding_page(format!("{}/simulated-gateway/onboard", app.address))
}

/// A driver's account and a link that onboards them, back to `/healthz`
/// (any page of the platform's will do) or, spent, to `/readyz`.
pub fn account_and_link(
    gateway: &impl PaymentGateway,
    app: &TestApp,
    key: &str,
) -> (Account, AccountLink) {
    let account = gateway
        .create_account(&CreateAccount {
            idempotency_key: key.to_owned(),
            email: format!("{key}@example.com"),
            country: "US".to_owned(),
            metadata: Vec::new(),
        })
        .unwrap();
    let link = gateway
        .create_account_link(&CreateAccountLink {
            idempotency_key: format!("{key}-link"),
            account: account.id.clone(),
            refresh_url: format!("{}/readyz", app.address),
            return_url: format!("{}/healthz", app.address),
        })
        .unwrap();
    (account, link)
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_driver_onboards_once_and_is_sent_back_or_to_refresh_a_spent_link() {
    let app = spawn_app().await;
    let gateway = gateway(&app);
    let client = no_redirects();
    let page = format!("{}/simulated-gateway/onboard", app.address);

    let (account, link) = account_and_link(&gateway, &app, "submits");
    let shown = client.get(&link.url).send().await.unwrap();
    assert_eq!(shown.status(), 200);
    let csp = shown.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains(&format!("form-action 'self' {}", app.address)),
        "{csp}"
    );
    let html = shown.text().await.unwrap();
    assert!(html.contains("submits@example.com") && html.contains("id=\"complete\""));
    let id = link.url.split("link=").nth(1).unwrap();
    let submitted = client
        .post(&page)
        .form(&[("link", id), ("outcome", "complete")])
        .send()
        .await
        .unwrap();
    assert_eq!(submitted.status(), 303);
    assert_eq!(
        submitted.headers()["location"],
        format!("{}/healthz", app.address).as_str()
    );
    assert!(gateway
        .retrieve_account(&account.id)
        .unwrap()
        .unwrap()
        .can_be_paid());
    // Spent: to the refresh page, whether opened or answered again.
    for again in [
        client.get(&link.url).send().await.unwrap(),
        client
            .post(&page)
            .form(&[("link", id), ("outcome", "complete")])
            .send()
            .await
            .unwrap(),
    ] {
        assert_eq!(again.status(), 303);
        assert_eq!(
            again.headers()["location"],
            format!("{}/readyz", app.address).as_str()
        );
    }

    // Leaving before the end changes nothing.
    let (account, link) = account_and_link(&gateway, &app, "leaves");
    let id = link.url.split("link=").nth(1).unwrap();
    let left = client
        .post(&page)
        .form(&[("link", id), ("outcome", "incomplete")])
        .send()
        .await
        .unwrap();
    assert_eq!(left.status(), 303);
    assert!(!gateway
        .retrieve_account(&account.id)
        .unwrap()
        .unwrap()
        .can_be_paid());

    // A link never made, or an answer of neither kind: not valid.
    let unknown = client
        .get(format!("{page}?link=link_sim_none"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    let odd = client
        .post(&page)
        .form(&[("link", id), ("outcome", "maybe")])
        .send()
        .await
        .unwrap();
    assert_eq!(odd.status(), 404);
}
