//! `POST /api/drivers`, `GET /api/drivers` and `GET /api/drivers/{id}`:
//! the platform's only, one connected account per key, the country
//! checked before anything is written.

use serde_json::json;

use super::registered;
use crate::common::app::{create_platform_user, spawn_app};

#[tokio::test]
async fn the_platform_registers_a_driver_once_per_key_with_an_account_at_the_gateway() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let body = json!({"email": "ada@example.com", "country": "US"});

    let answer = app.post_driver(&platform, "ada", &body).await;
    answer.assert_status(201);
    let driver = answer.json();
    let id = driver["id"].as_str().unwrap();
    assert!(id.starts_with("drv_") && id.len() == 33, "{id}");
    assert_eq!(
        answer.header("location"),
        Some(&*format!("/api/drivers/{id}"))
    );
    assert_eq!(driver["status"], "onboarding");
    assert_eq!(driver["email"], "ada@example.com");
    assert_eq!(driver["balances"], json!([]));
    let account = driver["account_id"].as_str().unwrap();
    assert!(account.starts_with("acct_"), "{account}");
    let url = driver["onboarding_url"].as_str().unwrap();
    let token = url
        .strip_prefix(&format!("{}/drivers/onboarding/", app.address))
        .and_then(|rest| rest.strip_suffix("/start"))
        .unwrap_or_else(|| panic!("{url}"));
    assert_eq!(token.len(), 32);
    // Only its hash is kept.
    assert_eq!(
        app.count(&format!(
            "drivers WHERE onboarding_token_hash = sha256('{token}'::bytea)"
        )),
        1
    );
    assert!(driver["onboarding_url_expires_at"].is_string());

    // The account, as the gateway holds it, names the installation's request
    // and the driver.
    let metadata: serde_json::Value = {
        use diesel::prelude::*;
        use ridepay_doubles::schema::simulated_accounts;
        simulated_accounts::table
            .filter(simulated_accounts::id.eq(account))
            .select(simulated_accounts::metadata)
            .first(&mut app.db())
            .unwrap()
    };
    assert_eq!(metadata["ridepay_driver"], id);
    assert!(metadata["ridepay_key"].is_string());

    let replay = app.post_driver(&platform, "ada", &body).await;
    replay.assert_status(201);
    assert_eq!(replay.body, answer.body);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(app.count("drivers"), 1);
    assert_eq!(app.count("simulated_accounts"), 1);

    // Read back: no onboarding URL but in the answer that made it.
    let read = app
        .get_as(&platform.api_key, &format!("/api/drivers/{id}"))
        .await;
    read.assert_status(200);
    let read = read.json();
    assert_eq!(read["id"], id);
    assert_eq!(read["status"], "onboarding");
    assert!(read.get("onboarding_url").is_none(), "{read}");

    let (second, _) = registered(&app, &platform, "grace").await;
    let listed = app.get_as(&platform.api_key, "/api/drivers?limit=1").await;
    listed.assert_status(200);
    let listed = listed.json();
    assert_eq!(listed["data"][0]["id"], second.to_string());
    assert_eq!(listed["has_more"], true);
    let after = app
        .get_as(
            &platform.api_key,
            &format!("/api/drivers?limit=1&starting_after={second}"),
        )
        .await
        .json();
    assert_eq!(after["data"][0]["id"], id);
    assert_eq!(after["has_more"], false);
}

#[tokio::test]
async fn a_riders_key_a_foreign_country_and_bad_fields_change_nothing() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);

    let rider = app
        .post_driver(
            &app.user,
            "rider",
            &json!({"email": "ada@example.com", "country": "US"}),
        )
        .await;
    rider.assert_problem(403, "forbidden");

    let abroad = app
        .post_driver(
            &platform,
            "abroad",
            &json!({"email": "ada@example.com", "country": "GB"}),
        )
        .await;
    abroad.assert_status(400);
    let errors = abroad.json()["errors"].clone();
    assert!(
        errors[0]["message"].as_str().unwrap().contains("US"),
        "{errors}"
    );
    assert_eq!(errors[0]["field"], "country", "{errors}");
    let bad = app
        .post_driver(&platform, "bad", &json!({"email": "not an address"}))
        .await;
    bad.assert_status(400);
    let fields: Vec<_> = bad.json()["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|error| error["field"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(fields, ["email", "country"]);
    assert_eq!(app.count("drivers"), 0);
    assert_eq!(app.count("simulated_accounts"), 0);
    // A refused request does not consume its key.
    app.post_driver(
        &platform,
        "abroad",
        &json!({"email": "ada@example.com", "country": "US"}),
    )
    .await
    .assert_status(201);

    for path in [
        "/api/drivers",
        "/api/drivers/drv_aaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    ] {
        app.get_as(&app.user.api_key, path).await.assert_status(403);
    }
    app.get_as(
        &platform.api_key,
        "/api/drivers/drv_aaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    )
    .await
    .assert_status(404);
    app.get_as(
        &platform.api_key,
        "/api/drivers/ride_aaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    )
    .await
    .assert_status(404);
}

/// The account's create answered by a failure the gateway saved under its
/// key: reconciliation finds the account in the gateway's list (or proves
/// none was made and the call is sent again), and the retry ends with one
/// driver and one account.
#[tokio::test]
async fn a_registration_whose_answer_was_a_saved_500_makes_one_account() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let failing = crate::common::app::spawn_server(&app.database_url, |settings| {
        settings.gateway.simulated.saved_error_rate = 1.0;
    })
    .await;
    let url = format!("{failing}/api/drivers");
    let body = json!({"email": "ada@example.com", "country": "US"});
    // A plain 500 first; the retry meets the failure the gateway saved.
    for _ in 0..2 {
        app.post_idempotent(&url, &platform.api_key, "ada", &body.to_string())
            .await
            .unwrap()
            .assert_problem(503, "payment-gateway-unavailable");
    }
    let made_before = app.count("simulated_accounts");

    let summary = crate::common::gateway::reconcile(&app);

    assert_eq!(summary.recorded + summary.reissued, 1, "{summary:?}");
    assert_eq!(summary.recorded, made_before as usize, "{summary:?}");
    let answer = app.post_driver(&platform, "ada", &body).await;
    answer.assert_status(201);
    assert_eq!(app.count("drivers"), 1);
    assert_eq!(app.count("simulated_accounts"), 1);
    assert_eq!(
        answer.json()["account_id"].as_str(),
        Some(
            app.get_as(&platform.api_key, "/api/drivers").await.json()["data"][0]["account_id"]
                .as_str()
                .unwrap()
        )
    );
}
