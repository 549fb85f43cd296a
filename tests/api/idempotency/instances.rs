//! Two server processes on one database, each with its completer and the
//! outbox's sender running, as instances behind a load balancer would be.

use std::collections::BTreeSet;
use std::time::Duration;

use futures_util::stream::{self, StreamExt};

use crate::common::app::{database_only, ride_with, TestApp, RIDE};
use crate::common::ids::Id;
use crate::common::receiver::Receiver;
use crate::common::server_process::ServerProcess;
use crate::common::wait::eventually;
use crate::webhook_endpoints::receipts::verified;

fn two_instances(app: &TestApp, extra: &[(&str, &str)]) -> (ServerProcess, ServerProcess) {
    let mut env = vec![("COMPLETER_ENABLED", "true"), ("OUTBOX_ENABLED", "true")];
    env.extend_from_slice(extra);
    (
        ServerProcess::start(&app.database_url, &env),
        ServerProcess::start(&app.database_url, &env),
    )
}

#[tokio::test]
async fn a_hundred_parallel_requests_with_one_key_over_two_instances_make_one_ride() {
    let app = database_only();
    let (a, b) = two_instances(&app, &[("SIMULATED_GATEWAY_LATENCY_MS", "200")]);
    let app = &app;

    let answers: Vec<_> = stream::iter(0..100)
        .map(|i| {
            let address = if i % 2 == 0 {
                a.address.clone()
            } else {
                b.address.clone()
            };
            async move {
                app.post_ride_to(&address, &app.user.api_key, "one-key", RIDE)
                    .await
            }
        })
        .buffer_unordered(100)
        .collect()
        .await;

    let created: Vec<_> = answers.iter().filter(|a| a.status == 201).collect();
    // On a loaded machine a claim may also wait out its lock timeout: a 503 a
    // client retries. Never anything else.
    for answer in &answers {
        match answer.status {
            201 => {}
            409 => assert_eq!(answer.header("retry-after"), Some("1")),
            _ => {
                answer.assert_problem(503, "service-unavailable");
            }
        }
    }
    assert!(created.windows(2).all(|pair| pair[0].body == pair[1].body));
    assert_eq!(app.counts(), (1, 1, 1));
}

#[tokio::test]
async fn a_thousand_keys_over_two_instances_make_a_thousand_rides_charges_and_receipts() {
    let app = database_only();
    let receiver = Receiver::start();
    let (a, b) = two_instances(
        &app,
        &[
            ("RECEIPT_WEBHOOK_URL", &receiver.url),
            (
                "RECEIPT_WEBHOOK_SECRET",
                crate::webhook_endpoints::receipts::SECRET,
            ),
        ],
    );
    let app = &app;

    let answers: Vec<_> = stream::iter(0..1000)
        .map(|i| {
            let address = if i % 2 == 0 {
                a.address.clone()
            } else {
                b.address.clone()
            };
            let body = ride_with(serde_json::json!({ "amount_cents": 1000 + i }));
            async move {
                let key = format!("key-{i}");
                // A real client retries a 503 (a pool wait timed out under
                // load, say) with the same key.
                (i, app.retry_body_until_final(&address, &key, &body).await)
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;

    for (i, answer) in &answers {
        assert_eq!(
            answer.status,
            201,
            "key-{i}: {}",
            String::from_utf8_lossy(&answer.body)
        );
        assert_eq!(answer.json()["amount_cents"], 1000 + i);
    }
    assert_eq!(app.counts(), (1000, 1000, 1000));
    assert_eq!(
        app.count("rides r JOIN simulated_payment_intents p ON p.id = r.payment_intent_id WHERE p.amount_received_cents = r.amount_cents"),
        1000
    );
    // Both senders ran side by side: every ride's receipt delivered, each
    // verified.
    let delivered = eventually(Duration::from_secs(60), || {
        app.count("webhook_deliveries WHERE status = 'succeeded'") == 1000
    })
    .await;
    assert!(delivered);
    let receipts: BTreeSet<Id> = receiver
        .received()
        .iter()
        .map(|received| Id::of(&verified(received)["data"]["ride"]["id"]))
        .collect();
    assert_eq!(receipts.len(), 1000);
}
