use crate::common::app::spawn_app;

#[tokio::test]
async fn healthz_and_readyz_answer_ok_on_a_migrated_database() {
    let app = spawn_app().await;
    for path in ["/healthz", "/readyz"] {
        assert_eq!(app.get(path).await.status, 200, "{path}");
    }
}

#[tokio::test]
async fn readyz_is_503_while_the_database_is_unreachable_and_healthz_stays_200() {
    let app = spawn_app().await;
    app.take_database_away();

    let ready = app.get("/readyz").await;
    let health = app.get("/healthz").await;

    let problem = ready.assert_problem(503, "service-unavailable");
    // Hosts, ports and driver messages are for the log only.
    assert_eq!(problem["detail"], "database unreachable");
    assert_eq!(health.status, 200);
    app.give_database_back();
    assert_eq!(app.get("/readyz").await.status, 200);
}
