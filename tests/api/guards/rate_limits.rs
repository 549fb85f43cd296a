//! Rate limits: per API key, and per address for what a stranger can reach
//! (made-up keys, the pages, Stripe's webhooks, `/readyz`); IPv4 clients of
//! a dual-stack listener each keep their own allowance.

use futures_util::future::join_all;

use crate::common::app::{create_user, spawn_app_with, Answer};

#[tokio::test]
async fn made_up_api_keys_from_one_address_are_limited_and_a_known_key_is_not() {
    let app = spawn_app_with(|s| {
        s.server.rate_limit.address_per_second = 2;
        s.server.rate_limit.address_burst = 10;
    })
    .await;
    // The real key is verified once, and from then on costs no allowance.
    assert_eq!(app.get("/api/rides").await.status, 200);

    let guesses: Vec<String> = (0..200).map(|i| format!("ridepay_sk_guess{i}")).collect();
    let flood = join_all(guesses.iter().map(|guess| app.get_as(guess, "/api/rides"))).await;
    let known = join_all((0..5).map(|_| app.get("/api/rides"))).await;

    let looked_up = flood.iter().filter(|a| a.status == 401).count();
    let limited: Vec<&Answer> = flood.iter().filter(|a| a.status == 429).collect();
    // Each 401 is one key lookup: the burst's worth, and what 2/s refill in
    // the time the flood takes.
    assert!(looked_up <= 14, "{looked_up} lookups for 200 made-up keys");
    assert_eq!(looked_up + limited.len(), 200);
    for answer in limited {
        answer.assert_rate_limited();
    }
    assert!(known.iter().all(|a| a.status == 200));
}

#[tokio::test]
async fn each_route_open_to_strangers_is_limited_per_address() {
    for (method, path) in [
        ("GET", "/readyz"),
        ("GET", "/metrics"),
        ("POST", "/webhooks/stripe"),
        ("POST", "/webhooks/stripe/connect"),
        (
            "GET",
            "/drivers/onboarding/00000000000000000000000000000000/start",
        ),
        (
            "GET",
            "/drivers/onboarding/00000000000000000000000000000000/refresh",
        ),
        (
            "GET",
            "/drivers/onboarding/00000000000000000000000000000000/return",
        ),
        ("GET", "/simulated-gateway/authenticate"),
        ("GET", "/simulated-gateway/onboard"),
        ("GET", "/payments/return"),
    ] {
        let app = spawn_app_with(|s| {
            s.server.rate_limit.address_per_second = 1;
            s.server.rate_limit.address_burst = 5;
        })
        .await;
        let url = format!("{}{path}", app.address);
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let answers = join_all((0..30).map(|_| async {
            let request = app
                .client
                .request(method.clone(), &url)
                .header("Content-Type", "application/json")
                .body("{}");
            Answer::read(request.send().await.unwrap()).await
        }))
        .await;
        let limited: Vec<&Answer> = answers.iter().filter(|a| a.status == 429).collect();
        assert!(
            limited.len() >= 20,
            "{path}: {} of 30 limited",
            limited.len()
        );
        for answer in limited {
            answer.assert_rate_limited();
        }
    }
}

/// On a dual-stack listener (`[::]`) an IPv4 client arrives as
/// `::ffff:a.b.c.d`: it must still count as its own address, never as the
/// one /64 every IPv4 client would share.
#[tokio::test]
async fn ipv4_clients_of_a_dual_stack_listener_never_share_an_allowance() {
    let app = spawn_app_with(|s| {
        s.server.bind_addr = "[::]:0".to_owned();
        s.server.rate_limit.address_per_second = 1;
        s.server.rate_limit.address_burst = 5;
    })
    .await;
    let port = app.address.rsplit(':').next().unwrap().to_owned();
    let readyz = format!("http://127.0.0.1:{port}/readyz");
    let from = |source: [u8; 4]| {
        reqwest::Client::builder()
            .local_address(std::net::IpAddr::from(source))
            .build()
            .unwrap()
    };
    let flooder = from([127, 0, 0, 1]);
    let flood = join_all(
        (0..30).map(|_| async { Answer::read(flooder.get(&readyz).send().await.unwrap()).await }),
    )
    .await;
    let limited = flood.iter().filter(|answer| answer.status == 429).count();
    assert!(limited >= 20, "{limited} of 30 limited");

    for other in [[127, 0, 0, 2], [127, 0, 0, 3]] {
        let answer = Answer::read(from(other).get(&readyz).send().await.unwrap()).await;
        assert_eq!(answer.status, 200, "{other:?}: {}", answer.body_text());
    }
}

#[tokio::test]
async fn a_flooding_key_is_rate_limited_and_another_key_is_not() {
    let app = spawn_app_with(|s| {
        s.server.rate_limit.per_second = 5;
        s.server.rate_limit.burst = 5;
    })
    .await;
    let calm = create_user(&app.database_url, None);

    let flood = join_all((0..30).map(|_| app.get("/api/rides"))).await;
    let others = join_all((0..3).map(|_| app.get_as(&calm.api_key, "/api/rides"))).await;

    let limited: Vec<_> = flood.iter().filter(|a| a.status == 429).collect();
    assert!(limited.len() >= 20, "{} of 30 limited", limited.len());
    for answer in &limited {
        answer.assert_rate_limited();
    }
    assert!(others.iter().all(|a| a.status == 200));
}
