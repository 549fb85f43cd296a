//! A rider's whole authentication in a real browser (Debian's Chromium,
//! headless, driven through chromedriver): the ride asks for it (202
//! `requires_action`), the browser opens `next_action`'s page, confirms or
//! refuses, lands on ridepay's return page, and the ride is what the
//! gateway says. Under `CI=true` a missing browser fails the run.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use ridepay::payments::PaymentGateway;
use serde_json::{json, Value};

use crate::common::app::{skip, spawn_app};
use crate::common::ids::Id;

const CHROMEDRIVER: &str = "chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";

/// chromedriver on a free loopback port, stopped when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    /// None when the browser or its driver is not installed.
    fn start() -> Option<Driver> {
        if !std::path::Path::new(CHROMIUM).exists() {
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let driver = Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(driver)
    }

    async fn browser(&self) -> Client {
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".to_owned(),
            json!({
                "binary": CHROMIUM,
                // As root (CI), Chromium runs only without its sandbox.
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--no-first-run"],
            }),
        );
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("a browser session")
    }
}

/// Opens the ride's `next_action`, answers with the button `answer`, and
/// returns the text of the page the browser lands on.
async fn authenticate(browser: &Client, ride: &Value, answer: &str) -> String {
    let page = ride["next_action"]["redirect_to_url"]["url"]
        .as_str()
        .unwrap();
    browser.goto(page).await.unwrap();
    let question = browser
        .find(Locator::Css("h1"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(question, "Confirm your payment");
    browser
        .find(Locator::Id(answer))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    landed(browser).await
}

/// The return page's text, once the browser is on it.
async fn landed(browser: &Client) -> String {
    let outcome = browser
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Id("outcome"))
        .await
        .unwrap();
    let url = browser.current_url().await.unwrap();
    assert_eq!(url.path(), "/payments/return", "{url}");
    outcome.text().await.unwrap()
}

#[tokio::test]
async fn a_rider_authenticates_in_a_browser_and_the_return_page_shows_the_ride_held() {
    let Some(driver) = Driver::start() else {
        return skip(
            "browser::a_rider_authenticates_in_a_browser_...",
            "Chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
        );
    };
    let app = spawn_app().await;
    let browser = driver.browser().await;

    let confirmed = app.waiting_ride("confirms").await;
    let shown = authenticate(&browser, &confirmed, "complete").await;
    assert!(
        shown.contains("Your card is authorized for $20.00"),
        "{shown}"
    );
    let ride = app.ride(Id::of(&confirmed["id"])).await;
    assert_eq!(
        (
            ride["status"].as_str(),
            ride["amount_authorized_cents"].as_i64()
        ),
        (Some("authorized"), Some(2000))
    );

    let refused = app.waiting_ride("refuses").await;
    let shown = authenticate(&browser, &refused, "fail").await;
    assert!(shown.contains("you have not been charged"), "{shown}");
    browser.refresh().await.unwrap();
    assert_eq!(landed(&browser).await, shown);
    let ride = app.ride(Id::of(&refused["id"])).await;
    assert_eq!(ride["status"], "payment_declined");
    // The reload, and the gateway's own event, applied nothing twice.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(app.transitions(&refused, "ride.payment_declined"), 1);
    assert_eq!(app.transitions(&confirmed, "ride.authorized"), 1);
    browser.close().await.unwrap();
}

#[tokio::test]
async fn a_driver_onboards_in_a_browser_and_lands_on_the_platforms_page() {
    let Some(driver) = Driver::start() else {
        return skip(
            "browser::a_driver_onboards_in_a_browser_...",
            "Chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
        );
    };
    let app = spawn_app().await;
    let gateway = crate::pages::onboarding_page::gateway(&app);
    let (account, link) = crate::pages::onboarding_page::account_and_link(&gateway, &app, "driver");
    let browser = driver.browser().await;

    browser.goto(&link.url).await.unwrap();
    let heading = browser.find(Locator::Css("h1")).await.unwrap();
    assert_eq!(heading.text().await.unwrap(), "Get paid by ridepay");
    browser
        .find(Locator::Id("complete"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    // Sent to the platform's return page (`/healthz` stands for it here).
    browser
        .wait()
        .at_most(Duration::from_secs(10))
        .for_url(&format!("{}/healthz", app.address).parse().unwrap())
        .await
        .unwrap();
    assert!(gateway
        .retrieve_account(&account.id)
        .unwrap()
        .unwrap()
        .can_be_paid());
    // The link is spent: opened again, it sends the driver to refresh it.
    browser.goto(&link.url).await.unwrap();
    browser
        .wait()
        .at_most(Duration::from_secs(10))
        .for_url(&format!("{}/readyz", app.address).parse().unwrap())
        .await
        .unwrap();
    browser.close().await.unwrap();
}
