//! The driver's pages: `start` sends them to the gateway's onboarding with
//! a link made as they open it, at most one a minute; the simulated page
//! submitted, `return` asks the gateway and shows them able to be paid; a
//! token ended by a new one, or never given, opens nothing.

use ridepay::public_ids::DriverPublicId;

use super::{no_redirects, registered};
use crate::common::app::{create_platform_user, spawn_app};
use crate::common::ids::Id;

#[tokio::test]
async fn a_driver_onboards_through_their_pages_and_becomes_active() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let (driver, start) = registered(&app, &platform, "ada").await;
    let client = no_redirects();

    let opened = client.get(&start).send().await.unwrap();
    assert_eq!(opened.status(), 303);
    assert_eq!(opened.headers()["referrer-policy"], "no-referrer");
    let link = opened.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        link.starts_with(&format!("{}/simulated-gateway/onboard?link=", app.address)),
        "{link}"
    );
    assert_eq!(app.count("simulated_account_links"), 1);
    // One link a minute per token: the second opening makes none.
    let again = client.get(&start).send().await.unwrap();
    assert_eq!(again.status(), 429);
    let wait: u64 = again.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(app.count("simulated_account_links"), 1);

    // Submitted at the gateway, the driver is sent to their return page.
    let id = link.split("link=").nth(1).unwrap();
    let submitted = client
        .post(format!("{}/simulated-gateway/onboard", app.address))
        .form(&[("link", id), ("outcome", "complete")])
        .send()
        .await
        .unwrap();
    assert_eq!(submitted.status(), 303);
    let back = submitted.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(back, start.replace("/start", "/return"));
    let page = client.get(&back).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    let html = page.text().await.unwrap();
    assert!(html.contains("data-status=\"active\""), "{html}");
    assert!(html.contains("You can be paid"), "{html}");

    let read = app
        .get_as(&platform.api_key, &format!("/api/drivers/{driver}"))
        .await
        .json();
    assert_eq!(read["status"], "active");
}

#[tokio::test]
async fn a_driver_who_leaves_onboarding_is_asked_to_continue() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let (driver, start) = registered(&app, &platform, "later").await;
    let client = no_redirects();
    let opened = client.get(&start).send().await.unwrap();
    let link = opened.headers()["location"].to_str().unwrap().to_owned();
    let id = link.split("link=").nth(1).unwrap();
    client
        .post(format!("{}/simulated-gateway/onboard", app.address))
        .form(&[("link", id), ("outcome", "incomplete")])
        .send()
        .await
        .unwrap();

    // Whatever the query says, the gateway is asked.
    let back = format!("{}?status=complete", start.replace("/start", "/return"));
    let html = client
        .get(&back)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("data-status=\"onboarding\""), "{html}");
    assert!(html.contains(&format!("href=\"{start}\"")), "{html}");
    let read = app
        .get_as(&platform.api_key, &format!("/api/drivers/{driver}"))
        .await
        .json();
    assert_eq!(read["status"], "onboarding");
}

#[tokio::test]
async fn a_new_link_ends_the_token_before_and_unknown_tokens_open_nothing() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let (driver, first) = registered(&app, &platform, "ada").await;
    let client = no_redirects();

    let answer = app
        .post_onboarding_link(&platform, driver, "new link")
        .await;
    answer.assert_status(200);
    let renewed = answer.json()["onboarding_url"].as_str().unwrap().to_owned();
    assert_ne!(renewed, first);
    let replay = app
        .post_onboarding_link(&platform, driver, "new link")
        .await;
    assert_eq!(replay.body, answer.body);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));

    assert_eq!(client.get(&first).send().await.unwrap().status(), 404);
    assert_eq!(client.get(&renewed).send().await.unwrap().status(), 303);
    let pages = format!("{}/drivers/onboarding", app.address);
    for unknown in [
        format!("{pages}/{}/start", "0".repeat(32)),
        format!("{pages}/{}/return", "0".repeat(32)),
        format!("{pages}/not-a-token/refresh"),
        format!("{pages}/{}/start", "A".repeat(32)),
    ] {
        assert_eq!(
            client.get(&unknown).send().await.unwrap().status(),
            404,
            "{unknown}"
        );
    }
    // Never a rider's, and never a driver that does not exist.
    app.post_onboarding_link(&app.user, driver, "rider")
        .await
        .assert_problem(403, "forbidden");
    let nobody = Id::nothing::<DriverPublicId>();
    app.post_onboarding_link(&platform, nobody, "nobody")
        .await
        .assert_status(404);
    assert_eq!(app.count("simulated_account_links"), 1);
}
