//! What a stranger can send, from an outside review's findings: nothing they
//! send grows metrics, holds a connection, floods the key lookup or the log,
//! breaks a column, or is followed somewhere else.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use ridepay::config::{GatewayKind, ReceiptDestination, StripeSettings};
use serde_json::json;

use crate::common::app::{database_only, spawn_app, spawn_app_with, Answer, TestApp, RIDE};
use crate::common::gateway::{stripe_event, WEBHOOK_SECRET};
use crate::common::raw_http::{raw, read_all, trickle};
use crate::common::server_process::ServerProcess;

/// The series of ridepay's HTTP request metrics for methods it does not
/// know: what invented requests could add to. (Other tests share the
/// process's registry, and add series of known routes and methods as they
/// run.)
async fn invented_method_series(app: &TestApp) -> usize {
    let scrape = app.get("/metrics").await;
    String::from_utf8(scrape.body)
        .unwrap()
        .lines()
        .filter(|line| {
            line.starts_with("ridepay_http_request") && line.contains(r#"method="other""#)
        })
        .count()
}

#[tokio::test]
async fn thousands_of_invented_methods_and_paths_add_no_metric_series() {
    let app = spawn_app().await;
    let invent = |i: usize| {
        let method =
            reqwest::Method::from_bytes(format!("M{i}{}", "Z".repeat(200)).as_bytes()).unwrap();
        app.client
            .request(method, format!("{}/x{i}/{}", app.address, "y".repeat(100)))
            .send()
    };
    // One of each kind first, so the fixed series all exist.
    for response in join_all((0..2).map(invent)).await {
        assert_eq!(response.unwrap().status(), 404);
    }
    let before = invented_method_series(&app).await;

    for batch in 0..10 {
        let answers = join_all((0..300).map(|i| invent(1000 + batch * 300 + i))).await;
        assert!(answers.into_iter().all(|a| a.unwrap().status() == 404));
    }

    let after = invented_method_series(&app).await;
    assert!(before > 0);
    assert_eq!(before, after, "3,000 invented requests added series");
    let scrape = String::from_utf8(app.get("/metrics").await.body).unwrap();
    assert!(scrape.contains(r#"route="unmatched""#), "{scrape:.2000}");
    assert!(!scrape.contains("ZZZZ"));
    assert!(!scrape.contains("yyyy"));
}

/// The head of a POST announcing a 100-byte JSON body.
fn post_head(path: &str, extra_headers: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\nConnection: close\r\n{extra_headers}\r\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_api_key_is_refused_before_the_body_is_read() {
    let app = spawn_app().await;
    let address = app.address.clone();
    let (answer, waited) = tokio::task::spawn_blocking(move || {
        let mut stream = raw(&address, Duration::from_secs(3));
        let head = post_head(
            "/api/rides",
            "Authorization: Bearer ridepay_sk_made_up\r\nIdempotency-Key: k\r\n",
        );
        stream.write_all(head.as_bytes()).unwrap();
        // The body never comes.
        let started = Instant::now();
        (read_all(&mut stream), started.elapsed())
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer:.200}");
    assert!(answer.contains("/problems/unauthorized"), "{answer}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
    assert_eq!(app.counts(), (0, 0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_trickled_past_the_time_limit_is_a_408_and_the_connection_is_closed() {
    let app = spawn_app_with(|s| {
        s.server.limits.body_timeout = Duration::from_secs(1);
        s.gateway.stripe.webhook_secret = Some(WEBHOOK_SECRET.to_owned().into());
    })
    .await;
    let rides = post_head(
        "/api/rides",
        &format!(
            "Authorization: Bearer {}\r\nIdempotency-Key: slow\r\n",
            app.user.api_key
        ),
    );
    let webhooks = post_head("/webhooks/stripe", "Stripe-Signature: t=1,v1=00\r\n");
    for head in [rides, webhooks] {
        let address = app.address.clone();
        let (answer, waited) = tokio::task::spawn_blocking(move || trickle(&address, head))
            .await
            .unwrap();
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer:.300}");
        assert!(answer.contains("/problems/request-timeout"), "{answer}");
        // Answered and hung up on at the limit, not when the client stopped.
        assert!(waited < Duration::from_secs(4), "{waited:?}");
    }
    assert_eq!(app.counts(), (0, 0, 0));
}

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
        ("GET", "/simulated-gateway/authenticate"),
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

/// A server that answers every request with a redirect to `target`, and one
/// that counts what reaches it there.
async fn redirector() -> (String, Arc<AtomicUsize>) {
    let reached = Arc::new(AtomicUsize::new(0));
    let counter = reached.clone();
    let target = actix_web::HttpServer::new(move || {
        let counter = counter.clone();
        actix_web::App::new().default_service(actix_web::web::to(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async {
                actix_web::HttpResponse::Ok()
                    .content_type("application/json")
                    .body(r#"{"id": "ch_elsewhere", "object": "charge", "status": "succeeded", "paid": true, "amount": 2000, "currency": "usd", "refunds": {"data": []}}"#)
            }
        }))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .unwrap();
    let target_url = format!("http://{}", target.addrs()[0]);
    tokio::spawn(target.run());
    let redirect = actix_web::HttpServer::new(move || {
        let target_url = target_url.clone();
        actix_web::App::new().default_service(actix_web::web::to(
            move |request: actix_web::HttpRequest| {
                let location = format!("{target_url}{}", request.path());
                async move {
                    actix_web::HttpResponse::Found()
                        .insert_header(("Location", location))
                        .finish()
                }
            },
        ))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .unwrap();
    let url = format!("http://{}", redirect.addrs()[0]);
    tokio::spawn(redirect.run());
    (url, reached)
}

#[tokio::test]
async fn a_redirect_from_the_gateway_is_not_followed_and_pays_nothing() {
    let (url, reached) = redirector().await;
    let app = spawn_app_with(|s| {
        s.gateway.kind = GatewayKind::Stripe;
        s.gateway.stripe = StripeSettings {
            api_key: Some("sk_test_redirected".to_owned().into()),
            api_base: url,
            ..StripeSettings::default()
        };
    })
    .await;

    let answer = app.post_ride("redirected", RIDE).await;

    assert_ne!(
        answer.status,
        201,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );
    assert_eq!(app.count("rides WHERE status = 'charged'"), 0);
}

#[tokio::test]
async fn a_redirect_from_the_receipts_destination_is_not_a_delivery() {
    let (url, reached) = redirector().await;
    let receipts = format!("{url}/receipts");
    let app = spawn_app_with(crate::receipts::sending_receipts(&receipts)).await;
    app.post_ride("receipt", RIDE).await.assert_status(201);

    let redirected = crate::common::wait::eventually(Duration::from_secs(30), || {
        app.count("webhook_attempts WHERE http_status = 302") >= 1
    })
    .await;

    assert!(redirected);
    assert_eq!(reached.load(Ordering::SeqCst), 0);
    assert_eq!(
        app.count("webhook_deliveries WHERE status = 'pending'"),
        1,
        "the receipt is still to deliver"
    );
}

#[test]
fn plain_http_to_another_host_is_refused_at_start_up() {
    for (name, url) in [
        ("STRIPE_API_BASE", "http://api.stripe.example"),
        ("RECEIPT_WEBHOOK_URL", "http://10.1.2.3/receipts"),
    ] {
        let mut settings = crate::common::settings::test_settings("postgres://localhost/r");
        settings.gateway.kind = GatewayKind::Stripe;
        settings.gateway.stripe.api_key = Some("sk_test_x".to_owned().into());
        if name == "STRIPE_API_BASE" {
            settings.gateway.stripe.api_base = url.to_owned();
        } else {
            settings.user_webhooks.receipts = Some(ReceiptDestination {
                url: url.to_owned(),
                secret: crate::receipts::SECRET.to_owned().into(),
            });
        }
        let refused = settings.validate().unwrap_err().to_string();
        assert!(
            refused.contains(name) && refused.contains("https://"),
            "{refused}"
        );
    }
}

#[tokio::test]
async fn a_path_too_long_for_its_column_is_a_404_and_writes_nothing() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;
    let padded = format!("{}{ride_id}", "0".repeat(2100));

    let answer = Answer::read(
        app.client
            .post(format!("{}/api/rides/{padded}/refunds", app.address))
            .bearer_auth(&app.user.api_key)
            .header("Idempotency-Key", "padded")
            .header("Content-Type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap(),
    )
    .await;

    answer.assert_problem(404, "not-found");
    assert_eq!(app.count("idempotency_keys"), 1, "only the ride's key");
    assert_eq!(app.count("refunds"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_without_a_secret_log_one_warning_however_many_arrive() {
    let app = database_only();
    let log = std::env::temp_dir().join(format!("ridepay-test-{}.log", uuid::Uuid::new_v4()));
    let server = ServerProcess::start_logged(&app.database_url, &[("RUST_LOG", "info")], &log);
    let client = reqwest::Client::new();
    let url = format!("{}/webhooks/stripe", server.address);
    let answers = join_all((0..200).map(|_| {
        client
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Stripe-Signature", "t=1,v1=00")
            .body("{}")
            .send()
    }))
    .await;
    server.terminate();
    let mut server = server;
    server.wait_for_exit(Duration::from_secs(30));
    let written = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_file(&log).unwrap();

    assert!(answers.into_iter().all(|a| a.unwrap().status() == 400));
    let errors = written.lines().filter(|l| l.contains(" ERROR ")).count();
    let warnings = written
        .lines()
        .filter(|l| l.contains("STRIPE_WEBHOOK_SECRET"))
        .count();
    assert_eq!((errors, warnings), (0, 1), "{written}");
}

#[tokio::test]
async fn a_signed_event_the_database_cannot_store_is_a_400_not_a_503() {
    let app = spawn_app_with(|s| {
        s.gateway.stripe.webhook_secret = Some(WEBHOOK_SECRET.to_owned().into())
    })
    .await;
    let object = json!({ "id": "cus_1" });
    for event in [
        // Year -7500: chrono has it, PostgreSQL does not.
        stripe_event(
            "evt_ancient",
            "customer.created",
            -300_000_000_000,
            object.clone(),
        ),
        stripe_event(
            "evt_far",
            "customer.created",
            300_000_000_000,
            object.clone(),
        ),
        stripe_event(
            "evt_\u{0}",
            "customer.created",
            1_700_000_000,
            object.clone(),
        ),
        stripe_event("evt_type", "customer.\u{0}", 1_700_000_000, object.clone()),
    ] {
        app.post_signed_webhook(&event)
            .await
            .assert_problem(400, "invalid-request");
    }
    assert_eq!(app.count("stripe_events"), 0);
}
