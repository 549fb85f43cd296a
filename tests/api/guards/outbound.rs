//! Where ridepay's own requests go: no redirect followed from the gateway or
//! the receipts destination, and no plain HTTP to a host of the outside
//! world.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ridepay::config::{GatewayKind, ReceiptDestination, StripeSettings};

use crate::common::app::{spawn_app_with, RIDE};

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
    let app = spawn_app_with(crate::webhook_endpoints::receipts::sending_receipts(
        &receipts,
    ))
    .await;
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
                secret: crate::webhook_endpoints::receipts::SECRET.to_owned().into(),
            });
        }
        let refused = settings.validate().unwrap_err().to_string();
        assert!(
            refused.contains(name) && refused.contains("https://"),
            "{refused}"
        );
    }
}
