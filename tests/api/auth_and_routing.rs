use crate::common::app::{spawn_app, Answer, RIDE};

#[tokio::test]
async fn api_routes_need_a_valid_bearer_key() {
    let app = spawn_app().await;
    let url = format!("{}/api/rides", app.address);
    let attempts = [
        app.client.get(&url),
        app.client
            .get(&url)
            .header("Authorization", "Basic dXNlcjpwYXNz"),
        app.client.get(&url).bearer_auth("ridepay_sk_0000"),
        app.client
            .post(&url)
            .bearer_auth("nope")
            .header("Idempotency-Key", "k")
            .body(RIDE),
        // An unknown key is answered before anything else is judged: the
        // missing Idempotency-Key, the broken body, the out-of-range limit.
        app.client
            .post(&url)
            .bearer_auth("ridepay_sk_0000")
            .header("Content-Type", "application/json")
            .body("{"),
        app.client
            .get(format!("{url}?limit=0"))
            .bearer_auth("ridepay_sk_0000"),
    ];
    for attempt in attempts {
        let answer = Answer::read(attempt.send().await.unwrap()).await;
        answer.assert_problem(401, "unauthorized");
        assert_eq!(answer.header("www-authenticate"), Some("Bearer"));
    }
    assert_eq!(app.counts(), (0, 0, 0));
}

#[tokio::test]
async fn unknown_routes_are_404_problems() {
    let app = spawn_app().await;
    app.get("/api/nothing-here")
        .await
        .assert_problem(404, "not-found");
    app.get("/nothing").await.assert_problem(404, "not-found");
}

#[tokio::test]
async fn wrong_methods_are_405_problems_with_allow() {
    let app = spawn_app().await;
    let answer = Answer::read(
        app.client
            .delete(format!("{}/api/rides", app.address))
            .bearer_auth(&app.user.api_key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    answer.assert_problem(405, "method-not-allowed");
    assert_eq!(answer.header("allow"), Some("GET, POST"));
    let put = Answer::read(
        app.client
            .put(format!("{}/api/rides/1", app.address))
            .send()
            .await
            .unwrap(),
    )
    .await;
    put.assert_problem(405, "method-not-allowed");
}
