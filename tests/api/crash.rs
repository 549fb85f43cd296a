//! Real process kills: the built binary aborts at each crash point
//! (`RIDEPAY_CRASH_AT`), is restarted, and the key ends with exactly one ride,
//! one charge, and the same answer on every replay, whether the client retries
//! or the completer finishes it alone.

use std::time::Duration;

use ridepay::crash;

use crate::helpers::{assert_takeover_fenced, database_only, Answer, TestApp, RIDE};
use crate::server_process::ServerProcess;
use crate::workers::eventually;

const KEY: &str = "crash-me";

/// Starts a server armed to abort at `point`, sends the request and waits for
/// the process to die.
async fn crash_at(app: &mut TestApp, point: &str) {
    let mut server = ServerProcess::start(&app.database_url, &[("RIDEPAY_CRASH_AT", point)]);
    app.address = server.address.clone();
    let first = app
        .try_post_ride_to(&server.address, &app.user.api_key, KEY, RIDE)
        .await;
    assert_crashed(&mut server, point, first);
}

/// The request got no answer and the server died of it.
fn assert_crashed(server: &mut ServerProcess, point: &str, first: Result<Answer, reqwest::Error>) {
    assert!(
        first.is_err(),
        "the server answered before crashing at {point}: {first:?}"
    );
    let status = server.wait_for_exit(Duration::from_secs(10));
    assert!(!status.success(), "{point}: {status:?}");
}

/// Every later replay is the same answer.
async fn assert_replays(app: &TestApp, address: &str, answer: &Answer) {
    for _ in 0..2 {
        let replay = app
            .post_ride_to(address, &app.user.api_key, KEY, RIDE)
            .await;
        assert_eq!(replay.status, answer.status);
        assert_eq!(replay.body, answer.body);
        assert_eq!(replay.header("location"), answer.header("location"));
        assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    }
}

async fn a_client_retry_finishes_after_a_crash_at(point: &str) {
    let mut app = database_only();
    crash_at(&mut app, point).await;
    let restarted = ServerProcess::start(&app.database_url, &[]);

    let answer = app.retry_until_final(&restarted.address, KEY).await;

    answer.assert_status(201);
    assert_eq!(app.counts(), (1, 1, 1), "{point}");
    assert_replays(&app, &restarted.address, &answer).await;
}

async fn the_completer_alone_finishes_after_a_crash_at(point: &str) {
    let mut app = database_only();
    crash_at(&mut app, point).await;
    let restarted = ServerProcess::start(&app.database_url, &[("COMPLETER_ENABLED", "true")]);

    if point == crash::AFTER_CLAIM {
        // The first transaction never committed: there is nothing to finish.
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(app.counts(), (0, 0, 0));
    } else {
        let finished = eventually(Duration::from_secs(20), || {
            app.key_state(KEY)["recovery_point"] == "finished"
        })
        .await;
        assert!(finished, "{point}: {}", app.key_state(KEY));
        assert_eq!(app.counts(), (1, 1, 1), "{point}");
    }
    let answer = app.retry_until_final(&restarted.address, KEY).await;
    assert_eq!(answer.status, 201);
    assert_eq!(app.counts(), (1, 1, 1), "{point}");
    assert_replays(&app, &restarted.address, &answer).await;
}

/// A test per crash point, finished by a client retry and by the completer
/// alone, with the module's `a_client_retry_finishes_after_a_crash_at` and
/// `the_completer_alone_finishes_after_a_crash_at`.
macro_rules! crash_tests {
    ($($name:ident => $point:expr),* $(,)?) => {
        mod client_retry {
            use super::*;
            $(#[tokio::test] async fn $name() { a_client_retry_finishes_after_a_crash_at($point).await; })*
        }
        mod completer_alone {
            use super::*;
            $(#[tokio::test] async fn $name() { the_completer_alone_finishes_after_a_crash_at($point).await; })*
        }
    };
}

crash_tests! {
    after_claim => crash::AFTER_CLAIM,
    after_ride_created => "after-ride-created",
    gateway_in_flight => crash::GATEWAY_IN_FLIGHT,
    after_charge => "after-charge",
    after_charge_completed => "after-charge-completed",
    after_finished => crash::AFTER_FINISHED,
}

#[tokio::test]
async fn a_lease_taken_over_for_real_fences_off_the_first_holder() {
    let mut app = database_only();
    let server = ServerProcess::start(
        &app.database_url,
        &[
            ("SIMULATED_GATEWAY_LATENCY_MS", "2500"),
            ("IDEMPOTENCY_LEASE_SECS", "1"),
        ],
    );
    app.address = server.address.clone();

    let first = app.post_ride(KEY, RIDE);
    let second = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        app.post_ride(KEY, RIDE).await
    };
    let (first, second) = tokio::join!(first, second);

    assert_takeover_fenced(&app, KEY, first, second).await;
}

/// The same, for `POST /api/rides/{id}/refunds`: the built binary aborts at
/// each point of the refunds flow, and the key ends with one refund at the
/// gateway, one refund row, and the same answer on every replay.
mod refunds {
    use super::*;

    const REFUND: &str = r#"{"amount_cents": 500}"#;

    /// A charged ride (made by a server that does not crash), then a refund
    /// request to a server armed to abort at `point`. Returns the ride.
    async fn crash_at(app: &mut TestApp, point: &str) -> i64 {
        let plain = ServerProcess::start(&app.database_url, &[]);
        app.address = plain.address.clone();
        let ride_id = app.paid_ride("ride").await;
        drop(plain);
        let mut server = ServerProcess::start(&app.database_url, &[("RIDEPAY_CRASH_AT", point)]);
        let first = app
            .post_refund_to(&server.address, &app.user.api_key, ride_id, KEY, REFUND)
            .await;
        assert_crashed(&mut server, point, first);
        ride_id
    }

    async fn retry_until_final(app: &TestApp, address: &str, ride_id: i64) -> Answer {
        for _ in 0..200 {
            match app
                .post_refund_to(address, &app.user.api_key, ride_id, KEY, REFUND)
                .await
            {
                Ok(answer) if answer.status != 409 && answer.status < 500 => return answer,
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        panic!("the refund never reached a final answer");
    }

    async fn assert_one_refund(app: &TestApp, address: &str, ride_id: i64, point: &str) {
        let answer = retry_until_final(app, address, ride_id).await;
        answer.assert_status(201);
        assert_eq!(app.count("simulated_refunds"), 1, "{point}");
        assert_eq!(app.count("refunds"), 1, "{point}");
        assert_eq!(
            app.count("rides WHERE amount_refunded_cents = 500"),
            1,
            "{point}"
        );
        for _ in 0..2 {
            let replay = retry_until_final(app, address, ride_id).await;
            assert_eq!(replay.body, answer.body);
            assert_eq!(replay.header("location"), answer.header("location"));
            assert_eq!(replay.header("idempotent-replayed"), Some("true"));
        }
    }

    async fn a_client_retry_finishes_after_a_crash_at(point: &str) {
        let mut app = database_only();
        let ride_id = crash_at(&mut app, point).await;
        let restarted = ServerProcess::start(&app.database_url, &[]);
        assert_one_refund(&app, &restarted.address, ride_id, point).await;
    }

    async fn the_completer_alone_finishes_after_a_crash_at(point: &str) {
        let mut app = database_only();
        let ride_id = crash_at(&mut app, point).await;
        let restarted = ServerProcess::start(&app.database_url, &[("COMPLETER_ENABLED", "true")]);
        let finished = eventually(Duration::from_secs(20), || {
            app.key_state(KEY)["recovery_point"] == "finished"
        })
        .await;
        assert!(finished, "{point}: {}", app.key_state(KEY));
        assert_one_refund(&app, &restarted.address, ride_id, point).await;
    }

    crash_tests! {
        after_refund_created => "after-refund-created",
        gateway_in_flight => crash::GATEWAY_IN_FLIGHT,
        after_refund => "after-refund",
        after_refund_completed => "after-refund-completed",
        after_finished => crash::AFTER_FINISHED,
    }
}

/// A new endpoint's recovery points and calls are crash points of their own:
/// this fails until each has its crash tests above.
#[test]
fn every_crash_point_of_every_endpoint_has_crash_tests() {
    let mut tested = vec![
        crash::AFTER_CLAIM,
        "after-ride-created",
        crash::GATEWAY_IN_FLIGHT,
        "after-charge",
        "after-charge-completed",
        crash::AFTER_FINISHED,
        "after-refund-created",
        "after-refund",
        "after-refund-completed",
    ];
    tested.sort_unstable();
    let mut listed = ridepay::http::registry::crash_points();
    listed.sort_unstable();
    assert_eq!(listed, tested);
}
