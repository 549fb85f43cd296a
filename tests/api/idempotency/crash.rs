//! Real process kills: the built binary aborts at each crash point
//! (`RIDEPAY_CRASH_AT`), is restarted, and the key ends with exactly one ride,
//! one charge, the same answer on every replay and the ledger exact, whether
//! the client retries or the completer finishes it alone.

use std::time::Duration;

use ridepay::crash;

use crate::common::app::{database_only, Answer, TestApp, RIDE};
use crate::common::ids::Id;
use crate::common::keys::assert_takeover_fenced;
use crate::common::server_process::ServerProcess;
use crate::common::wait::eventually;
use crate::ledger::assert_exact;

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
    assert_exact(&app, point);
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
    assert_exact(&app, point);
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

/// The same, for a module whose two functions take what the request is
/// (`$param`) beside the point: the tests in a module of their own.
macro_rules! crash_tests_of {
    ($module:ident, $param:expr, $($name:ident => $point:expr),* $(,)?) => {
        mod $module {
            use super::*;
            mod client_retry {
                use super::*;
                $(#[tokio::test] async fn $name() { a_client_retry_finishes_after_a_crash_at($point, &$param).await; })*
            }
            mod completer_alone {
                use super::*;
                $(#[tokio::test] async fn $name() { the_completer_alone_finishes_after_a_crash_at($point, &$param).await; })*
            }
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
/// gateway per part, one refund row per part, and the same answer on every
/// replay; a refund spanning fare and tip, split in two parts, likewise.
mod refunds {
    use super::*;

    /// What is refunded, of what ride.
    struct Refunding {
        body: &'static str,
        /// The ride is tipped after its capture first.
        tipped: bool,
        parts: i64,
        refunded: i64,
    }

    const OF_THE_FARE: Refunding = Refunding {
        body: r#"{"amount_cents": 500}"#,
        tipped: false,
        parts: 1,
        refunded: 500,
    };

    /// More than the fare's 2000: 300 of it from the tip's PaymentIntent.
    const FARE_AND_TIP: Refunding = Refunding {
        body: r#"{"amount_cents": 2300}"#,
        tipped: true,
        parts: 2,
        refunded: 2300,
    };

    /// A charged ride (made by a server that does not crash), then a refund
    /// request to a server armed to abort at `point`. Returns the ride.
    async fn crash_at(app: &mut TestApp, point: &str, refunding: &Refunding) -> Id {
        let plain = ServerProcess::start(&app.database_url, &[]);
        app.address = plain.address.clone();
        let ride_id = match refunding.tipped {
            true => {
                let ride_id = app.saved_card_ride("ride").await;
                app.post_tip(ride_id, "tip", r#"{"amount_cents": 500}"#)
                    .await
                    .assert_status(200);
                ride_id
            }
            false => app.paid_ride("ride").await,
        };
        drop(plain);
        let mut server = ServerProcess::start(&app.database_url, &[("RIDEPAY_CRASH_AT", point)]);
        let first = app
            .post_refund_to(
                &server.address,
                &app.user.api_key,
                ride_id,
                KEY,
                refunding.body,
            )
            .await;
        assert_crashed(&mut server, point, first);
        ride_id
    }

    async fn retry_until_final(
        app: &TestApp,
        address: &str,
        ride_id: Id,
        refunding: &Refunding,
    ) -> Answer {
        for _ in 0..200 {
            match app
                .post_refund_to(address, &app.user.api_key, ride_id, KEY, refunding.body)
                .await
            {
                Ok(answer) if answer.status != 409 && answer.status < 500 => return answer,
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        panic!("the refund never reached a final answer");
    }

    async fn assert_one_refund(
        app: &TestApp,
        address: &str,
        ride_id: Id,
        point: &str,
        refunding: &Refunding,
    ) {
        let answer = retry_until_final(app, address, ride_id, refunding).await;
        answer.assert_status(201);
        assert_eq!(app.count("simulated_refunds"), refunding.parts, "{point}");
        assert_eq!(app.count("refunds"), refunding.parts, "{point}");
        assert_eq!(
            app.count(&format!(
                "rides WHERE amount_refunded_cents = {}",
                refunding.refunded
            )),
            1,
            "{point}"
        );
        for _ in 0..2 {
            let replay = retry_until_final(app, address, ride_id, refunding).await;
            assert_eq!(replay.body, answer.body);
            assert_eq!(replay.header("location"), answer.header("location"));
            assert_eq!(replay.header("idempotent-replayed"), Some("true"));
        }
        assert_exact(app, point);
    }

    async fn a_client_retry_finishes_after_a_crash_at(point: &str, refunding: &Refunding) {
        let mut app = database_only();
        let ride_id = crash_at(&mut app, point, refunding).await;
        let restarted = ServerProcess::start(&app.database_url, &[]);
        assert_one_refund(&app, &restarted.address, ride_id, point, refunding).await;
    }

    async fn the_completer_alone_finishes_after_a_crash_at(point: &str, refunding: &Refunding) {
        let mut app = database_only();
        let ride_id = crash_at(&mut app, point, refunding).await;
        let restarted = ServerProcess::start(&app.database_url, &[("COMPLETER_ENABLED", "true")]);
        let finished = eventually(Duration::from_secs(20), || {
            app.key_state(KEY)["recovery_point"] == "finished"
        })
        .await;
        assert!(finished, "{point}: {}", app.key_state(KEY));
        assert_one_refund(&app, &restarted.address, ride_id, point, refunding).await;
    }

    crash_tests_of! {
        of_the_fare, OF_THE_FARE,
        after_refund_created => "after-refund-created",
        gateway_in_flight => crash::GATEWAY_IN_FLIGHT,
        after_refund => "after-refund",
        after_refund_completed => "after-refund-completed",
        after_finished => crash::AFTER_FINISHED,
    }

    crash_tests_of! {
        fare_and_tip, FARE_AND_TIP,
        after_refund => "after-refund",
        after_fare_part_refunded => "after-fare-part-refunded",
        after_refund_tip_part => "after-refund-tip-part",
        after_refund_completed => "after-refund-completed",
    }
}

/// The same for completing, cancelling and tipping a ride: a held ride (or,
/// for a tip, one captured on the saved card), made by a server that does
/// not crash, then the request to a server armed to abort at the point, and
/// the key ends with one payment made at the gateway by one call and the
/// ride as the request asked.
mod lifecycle {
    use super::*;

    /// One of the endpoints under test: what is sent, and what it ends with.
    struct Action {
        path: &'static str,
        body: &'static str,
        status: &'static str,
        captured: i64,
        /// The ride is captured on the saved card first, not held.
        paid_at_once: bool,
        /// What the gateway holds exactly once at the end.
        made: &'static str,
        /// The calls that made it, exactly one.
        calls: &'static str,
    }

    /// Above the hold: the hold is raised, then captured.
    const COMPLETE: Action = Action {
        path: "complete",
        body: r#"{"final_amount_cents": 2600}"#,
        status: "captured",
        captured: 2600,
        paid_at_once: false,
        made:
            "simulated_payment_intents WHERE status = 'succeeded' AND amount_received_cents = 2600",
        calls: "simulated_intent_calls WHERE operation = 'capture'",
    };

    /// With a fee: the fee is captured, the rest released.
    const CANCEL: Action = Action {
        path: "cancel",
        body: r#"{"cancellation_fee_cents": 500}"#,
        status: "canceled",
        captured: 500,
        paid_at_once: false,
        made:
            "simulated_payment_intents WHERE status = 'succeeded' AND amount_received_cents = 500",
        calls: "simulated_intent_calls WHERE operation = 'capture'",
    };

    /// After the capture: a PaymentIntent of its own, off session.
    const TIP: Action = Action {
        path: "tip",
        body: r#"{"amount_cents": 500}"#,
        status: "captured",
        captured: 2500,
        paid_at_once: true,
        made: "simulated_payment_intents WHERE status = 'succeeded' AND amount_cents = 500",
        calls: "simulated_intent_calls WHERE idempotency_key LIKE 'ridepay%-ride-tip-%'",
    };

    async fn send(
        app: &TestApp,
        address: &str,
        ride_id: Id,
        action: &Action,
    ) -> Result<Answer, reqwest::Error> {
        let url = format!("{address}/api/rides/{ride_id}/{}", action.path);
        app.post_idempotent(&url, &app.user.api_key, KEY, action.body)
            .await
    }

    async fn crash_at(app: &mut TestApp, point: &str, action: &Action) -> Id {
        let plain = ServerProcess::start(&app.database_url, &[]);
        app.address = plain.address.clone();
        let ride_id = match action.paid_at_once {
            true => app.saved_card_ride("ride").await,
            false => app.held_ride("ride", "pm_card_visa").await,
        };
        drop(plain);
        let mut server = ServerProcess::start(&app.database_url, &[("RIDEPAY_CRASH_AT", point)]);
        let first = send(app, &server.address, ride_id, action).await;
        assert_crashed(&mut server, point, first);
        ride_id
    }

    async fn until_final(app: &TestApp, address: &str, ride_id: Id, action: &Action) -> Answer {
        for _ in 0..200 {
            match send(app, address, ride_id, action).await {
                Ok(answer) if answer.status != 409 && answer.status < 500 => return answer,
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        panic!("the {} never reached a final answer", action.path);
    }

    async fn assert_done_once(
        app: &TestApp,
        address: &str,
        ride_id: Id,
        action: &Action,
        point: &str,
    ) {
        let answer = until_final(app, address, ride_id, action).await;
        answer.assert_status(200);
        let ride = answer.json();
        assert_eq!(
            (
                ride["status"].as_str(),
                ride["amount_captured_cents"].as_i64()
            ),
            (Some(action.status), Some(action.captured)),
            "{point}"
        );
        assert_eq!(app.count(action.made), 1, "{point}");
        assert_eq!(app.count(action.calls), 1, "{point}");
        assert_eq!(
            app.count("rides WHERE settling_key_id IS NOT NULL"),
            0,
            "{point}"
        );
        for _ in 0..2 {
            let replay = until_final(app, address, ride_id, action).await;
            assert_eq!(replay.body, answer.body);
            assert_eq!(replay.header("idempotent-replayed"), Some("true"));
        }
        assert_exact(app, point);
    }

    async fn a_client_retry_finishes_after_a_crash_at(point: &str, action: &Action) {
        let mut app = database_only();
        let ride_id = crash_at(&mut app, point, action).await;
        let restarted = ServerProcess::start(&app.database_url, &[]);
        assert_done_once(&app, &restarted.address, ride_id, action, point).await;
    }

    async fn the_completer_alone_finishes_after_a_crash_at(point: &str, action: &Action) {
        let mut app = database_only();
        let ride_id = crash_at(&mut app, point, action).await;
        let restarted = ServerProcess::start(&app.database_url, &[("COMPLETER_ENABLED", "true")]);
        let finished = eventually(Duration::from_secs(20), || {
            app.key_state(KEY)["recovery_point"] == "finished"
        })
        .await;
        assert!(finished, "{point}: {}", app.key_state(KEY));
        assert_done_once(&app, &restarted.address, ride_id, action, point).await;
    }

    crash_tests_of! {
        complete, COMPLETE,
        after_completion_started => "after-completion-started",
        gateway_in_flight => crash::GATEWAY_IN_FLIGHT,
        after_increment => "after-increment",
        after_hold_covers => "after-hold-covers",
        after_capture => "after-capture",
        after_finished => crash::AFTER_FINISHED,
    }

    crash_tests_of! {
        cancel, CANCEL,
        after_cancellation_started => "after-cancellation-started",
        gateway_in_flight => crash::GATEWAY_IN_FLIGHT,
        after_cancel => "after-cancel",
        after_finished => crash::AFTER_FINISHED,
    }

    crash_tests_of! {
        tip, TIP,
        after_tip_started => "after-tip-started",
        gateway_in_flight => crash::GATEWAY_IN_FLIGHT,
        after_tip_payment => "after-tip-payment",
        after_finished => crash::AFTER_FINISHED,
    }
}

/// The same for `POST /api/webhook_endpoints` and the actions on a
/// destination (a delivery sent again, the secret rolled, a test event): the
/// key ends with one destination (one delivery due again, one roll, one test
/// event), and the same answer (a secret included) on every replay.
mod webhook_endpoints {
    use super::*;

    const BODY: &str = r#"{"url": "http://127.0.0.1:9/hook", "events": ["ride.*"]}"#;
    const LOOPBACK: (&str, &str) = ("OUTBOUND_WEBHOOK_ALLOW_LOOPBACK", "true");

    /// What is asked under the key, and what it must leave once.
    pub(super) struct Request {
        path: &'static str,
        body: &'static str,
        status: u16,
        /// The rows it makes or changes: exactly one, at the end.
        done: &'static str,
        /// A destination and a delivery to it are made first, by a server
        /// that does not crash.
        set_up: bool,
        /// Its phases all run in the claim's transaction: a crash before the
        /// answer is stored leaves no key behind, nothing for the completer.
        one_transaction: bool,
    }

    const REGISTER: Request = Request {
        path: "/api/webhook_endpoints",
        body: BODY,
        status: 201,
        done: "webhook_endpoints WHERE user_id IS NOT NULL",
        set_up: false,
        one_transaction: false,
    };

    /// A delivery, never attempted (the sender is off), made due again.
    const RETRY: Request = Request {
        path: "/api/webhook_endpoints/{destination}/deliveries/{delivery}/retry",
        body: "{}",
        status: 200,
        done: "webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= now()",
        set_up: true,
        one_transaction: true,
    };

    /// A new secret; the one before still signs.
    const ROLL: Request = Request {
        path: "/api/webhook_endpoints/{destination}/roll_secret",
        body: "{}",
        status: 200,
        done: "webhook_endpoints WHERE previous_secret IS NOT NULL",
        set_up: true,
        one_transaction: true,
    };

    /// A test event and its delivery.
    const TEST: Request = Request {
        path: "/api/webhook_endpoints/{destination}/test",
        body: "{}",
        status: 200,
        done: "webhook_events WHERE type = 'webhook_endpoint.test'",
        set_up: true,
        one_transaction: true,
    };

    async fn send(
        app: &TestApp,
        address: &str,
        request: &Request,
    ) -> Result<Answer, reqwest::Error> {
        let url = format!("{address}{}", path_of(app, request));
        app.post_idempotent(&url, &app.user.api_key, KEY, request.body)
            .await
    }

    /// The request's path, naming the destination and the delivery
    /// `set_up` made.
    fn path_of(app: &TestApp, request: &Request) -> String {
        use diesel::prelude::*;
        use ridepay::public_ids::{DeliveryPublicId, DestinationPublicId};
        use ridepay::schema::{webhook_deliveries, webhook_endpoints};
        if !request.set_up {
            return request.path.to_owned();
        }
        let mut conn = app.db();
        let destination: DestinationPublicId = webhook_endpoints::table
            .filter(webhook_endpoints::user_id.is_not_null())
            .select(webhook_endpoints::public_id)
            .first(&mut conn)
            .unwrap();
        let delivery: DeliveryPublicId = webhook_deliveries::table
            .select(webhook_deliveries::public_id)
            .first(&mut conn)
            .unwrap();
        request
            .path
            .replace("{destination}", &destination.to_string())
            .replace("{delivery}", &delivery.to_string())
    }

    /// A destination and one delivery to it, staged for a paid ride.
    async fn set_up(app: &mut TestApp) {
        let plain = ServerProcess::start(&app.database_url, &[LOOPBACK]);
        app.address = plain.address.clone();
        let url = format!("{}/api/webhook_endpoints", plain.address);
        app.post_idempotent(&url, &app.user.api_key, "set up", BODY)
            .await
            .unwrap()
            .assert_status(201);
        app.paid_ride("ride").await;
        assert_eq!(app.count("webhook_deliveries"), 1);
    }

    async fn crash_at(app: &mut TestApp, point: &str, request: &Request) {
        if request.set_up {
            set_up(app).await;
        }
        let mut server =
            ServerProcess::start(&app.database_url, &[("RIDEPAY_CRASH_AT", point), LOOPBACK]);
        let first = send(app, &server.address, request).await;
        assert_crashed(&mut server, point, first);
    }

    async fn assert_done_once(app: &TestApp, address: &str, point: &str, request: &Request) {
        let mut answers = Vec::new();
        while answers.len() < 3 {
            match send(app, address, request).await {
                Ok(answer) if answer.status != 409 && answer.status < 500 => answers.push(answer),
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        answers[0].assert_status(request.status);
        for replay in &answers[1..] {
            assert_eq!(replay.body, answers[0].body, "{point}");
            assert_eq!(replay.header("idempotent-replayed"), Some("true"));
        }
        assert_eq!(app.count(request.done), 1, "{point}");
    }

    async fn a_client_retry_finishes_after_a_crash_at(point: &str, request: &Request) {
        let mut app = database_only();
        crash_at(&mut app, point, request).await;
        let restarted = ServerProcess::start(&app.database_url, &[LOOPBACK]);
        assert_done_once(&app, &restarted.address, point, request).await;
    }

    async fn the_completer_alone_finishes_after_a_crash_at(point: &str, request: &Request) {
        let mut app = database_only();
        crash_at(&mut app, point, request).await;
        let restarted = ServerProcess::start(
            &app.database_url,
            &[("COMPLETER_ENABLED", "true"), LOOPBACK],
        );
        if request.one_transaction && point != crash::AFTER_FINISHED {
            assert_eq!(app.key_state(KEY), serde_json::Value::Null, "{point}");
        } else {
            let finished = eventually(Duration::from_secs(20), || {
                app.key_state(KEY)["recovery_point"] == "finished"
            })
            .await;
            assert!(finished, "{point}: {}", app.key_state(KEY));
        }
        assert_done_once(&app, &restarted.address, point, request).await;
    }

    crash_tests_of! {
        register, REGISTER,
        after_destination_named => "after-destination-named",
        after_check_destination => "after-check-destination",
        after_finished => crash::AFTER_FINISHED,
    }

    crash_tests_of! {
        retry, RETRY,
        after_requeued => "after-requeued",
        after_finished => crash::AFTER_FINISHED,
    }

    crash_tests_of! {
        roll, ROLL,
        after_rolled => "after-rolled",
        after_finished => crash::AFTER_FINISHED,
    }

    crash_tests_of! {
        test_event, TEST,
        after_staged => "after-staged",
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
        "after-completion-started",
        "after-increment",
        "after-hold-covers",
        "after-capture",
        "after-cancellation-started",
        "after-cancel",
        "after-fare-part-refunded",
        "after-refund-tip-part",
        "after-tip-started",
        "after-tip-payment",
        "after-destination-named",
        "after-check-destination",
        "after-requeued",
        "after-rolled",
        "after-staged",
        "after-account-requested",
        "after-create-account",
        "after-transfers-claimed",
        "after-transfer",
        "after-reversals-claimed",
        "after-reversal",
    ];
    tested.sort_unstable();
    let mut listed = ridepay::endpoints::crash_points();
    listed.sort_unstable();
    assert_eq!(listed, tested);
}

/// The same for `POST /api/drivers` and `.../onboarding_link`: the key
/// ends with one driver and one connected account at the gateway (one
/// token renewal), and the same answer, its onboarding URL included, on
/// every replay.
mod drivers {
    use super::*;
    use crate::common::app::{create_platform_user, TestUser};

    const BODY: &str = r#"{"email": "ada@example.com", "country": "US"}"#;

    /// What is asked: the driver registered, or (`link`) a new link for the
    /// driver registered first by a server that does not crash.
    async fn send(
        app: &TestApp,
        platform: &TestUser,
        address: &str,
        link: bool,
    ) -> Result<Answer, reqwest::Error> {
        let (path, body) = match link {
            false => ("/api/drivers".to_owned(), BODY),
            true => {
                let driver: ridepay::public_ids::DriverPublicId = {
                    use diesel::prelude::*;
                    ridepay::schema::drivers::table
                        .select(ridepay::schema::drivers::public_id)
                        .first(&mut app.db())
                        .unwrap()
                };
                (format!("/api/drivers/{driver}/onboarding_link"), "{}")
            }
        };
        let url = format!("{address}{path}");
        app.post_idempotent(&url, &platform.api_key, KEY, body)
            .await
    }

    async fn crash_at(point: &str, link: bool) -> (TestApp, TestUser) {
        let mut app = database_only();
        let platform = create_platform_user(&app.database_url);
        if link {
            let plain = ServerProcess::start(&app.database_url, &[]);
            let url = format!("{}/api/drivers", plain.address);
            app.post_idempotent(&url, &platform.api_key, "set up", BODY)
                .await
                .unwrap()
                .assert_status(201);
        }
        let mut server = ServerProcess::start(&app.database_url, &[("RIDEPAY_CRASH_AT", point)]);
        app.address = server.address.clone();
        let first = send(&app, &platform, &server.address, link).await;
        assert_crashed(&mut server, point, first);
        (app, platform)
    }

    async fn assert_done_once(
        app: &TestApp,
        platform: &TestUser,
        address: &str,
        point: &str,
        link: bool,
    ) {
        let mut answers = Vec::new();
        while answers.len() < 3 {
            match send(app, platform, address, link).await {
                Ok(answer) if answer.status != 409 && answer.status < 500 => answers.push(answer),
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        answers[0].assert_status(if link { 200 } else { 201 });
        assert!(answers[0].json()["onboarding_url"].is_string(), "{point}");
        for replay in &answers[1..] {
            assert_eq!(replay.body, answers[0].body, "{point}");
            assert_eq!(replay.header("idempotent-replayed"), Some("true"));
        }
        assert_eq!(app.count("drivers"), 1, "{point}");
        assert_eq!(app.count("simulated_accounts"), 1, "{point}");
        // The answer's token is the one the driver's pages open.
        let url = answers[0].json()["onboarding_url"]
            .as_str()
            .unwrap()
            .to_owned();
        let token = url.rsplit('/').nth(1).unwrap().to_owned();
        assert_eq!(
            app.count(&format!(
                "drivers WHERE onboarding_token_hash = sha256('{token}'::bytea)"
            )),
            1,
            "{point}"
        );
    }

    async fn a_client_retry_finishes_after_a_crash_at(point: &str, link: &bool) {
        let (app, platform) = crash_at(point, *link).await;
        let restarted = ServerProcess::start(&app.database_url, &[]);
        assert_done_once(&app, &platform, &restarted.address, point, *link).await;
    }

    async fn the_completer_alone_finishes_after_a_crash_at(point: &str, link: &bool) {
        let (app, platform) = crash_at(point, *link).await;
        let restarted = ServerProcess::start(&app.database_url, &[("COMPLETER_ENABLED", "true")]);
        if point == crash::AFTER_CLAIM || (*link && point != crash::AFTER_FINISHED) {
            // Nothing committed: nothing for the completer.
            assert_eq!(app.key_state(KEY), serde_json::Value::Null, "{point}");
        } else {
            let finished = eventually(Duration::from_secs(20), || {
                app.key_state(KEY)["recovery_point"] == "finished"
            })
            .await;
            assert!(finished, "{point}: {}", app.key_state(KEY));
        }
        assert_done_once(&app, &platform, &restarted.address, point, *link).await;
    }

    crash_tests_of! {
        register, false,
        after_claim => crash::AFTER_CLAIM,
        after_account_requested => "after-account-requested",
        after_create_account => "after-create-account",
        after_finished => crash::AFTER_FINISHED,
    }

    crash_tests_of! {
        link, true,
        after_claim => crash::AFTER_CLAIM,
        after_finished => crash::AFTER_FINISHED,
    }
}

/// The same for `POST /api/rides/{id}/driver`, written whole in the claim's
/// transaction: a crash before its answer leaves no key (nothing for the
/// completer), one after leaves it finished; either way the retry ends
/// with the ride assigned once, one reallocation and one transfer owed, and
/// the ledger exact.
mod assignment {
    use super::*;
    use crate::common::app::create_platform_user;

    async fn a_retry_assigns_once_after_a_crash_at(point: &str) {
        let mut app = database_only();
        let platform = create_platform_user(&app.database_url);
        let plain = ServerProcess::start(&app.database_url, &[]);
        app.address = plain.address.clone();
        let driver = crate::drivers::active_driver(&app, &platform, "ada").await;
        let ride = app.paid_ride("paid").await;
        drop(plain);
        let body = format!(r#"{{"driver_id": "{driver}"}}"#);
        let send = |address: String| {
            let (app, platform, body) = (&app, &platform, &body);
            async move {
                let url = format!("{address}/api/rides/{ride}/driver");
                app.post_idempotent(&url, &platform.api_key, KEY, body)
                    .await
            }
        };
        let mut server = ServerProcess::start(&app.database_url, &[("RIDEPAY_CRASH_AT", point)]);
        let first = send(server.address.clone()).await;
        assert_crashed(&mut server, point, first);
        let left = app.key_state(KEY);
        match point {
            crash::AFTER_FINISHED => assert_eq!(left["recovery_point"], "finished", "{point}"),
            _ => assert_eq!(left, serde_json::Value::Null, "{point}"),
        }
        let restarted = ServerProcess::start(&app.database_url, &[]);
        let mut answers = Vec::new();
        while answers.len() < 2 {
            match send(restarted.address.clone()).await {
                Ok(answer) if answer.status != 409 && answer.status < 500 => answers.push(answer),
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        answers[0].assert_status(200);
        assert_eq!(answers[1].body, answers[0].body, "{point}");
        assert_eq!(answers[1].header("idempotent-replayed"), Some("true"));
        assert_eq!(app.count("ride_drivers"), 1, "{point}");
        assert_eq!(app.count("transfers"), 1, "{point}");
        assert_exact(&app, point);
    }

    #[tokio::test]
    async fn after_claim() {
        a_retry_assigns_once_after_a_crash_at(crash::AFTER_CLAIM).await;
    }

    #[tokio::test]
    async fn after_finished() {
        a_retry_assigns_once_after_a_crash_at(crash::AFTER_FINISHED).await;
    }
}

/// The transfer worker killed at each of its points, once with a transfer
/// owed and once with a reversal owed: restarted, it makes each exactly
/// once (the gateway deduplicates the second send under the same key), and
/// the ledger is exact.
mod transfer_worker {
    use super::*;
    use crate::common::app::create_platform_user;
    use ridepay::drivers::transfers::make_due;

    /// Short claims, so that the restarted worker takes over soon.
    const WORKER: [(&str, &str); 2] = [
        ("TRANSFER_CLAIM_SECS", "1"),
        ("TRANSFER_WORKER_INTERVAL_MS", "100"),
    ];

    async fn made_once_after_a_crash_at(point: &str) {
        let mut app = database_only();
        let platform = create_platform_user(&app.database_url);
        let plain =
            ServerProcess::start(&app.database_url, &[("TRANSFER_WORKER_ENABLED", "false")]);
        app.address = plain.address.clone();
        let driver = crate::drivers::active_driver(&app, &platform, "ada").await;
        let ride = app.paid_ride("paid").await;
        app.post_assign_driver(&platform, ride, driver, "assign")
            .await
            .assert_status(200);
        let reversing = point.contains("reversal");
        if reversing {
            assert_eq!(make_due(&app.service_context(), 10).unwrap().made, 1);
            let account = crate::drivers::account_of(&app, &platform.api_key, driver).await;
            ridepay_doubles::accounts::make_available(&mut app.db(), &account).unwrap();
            app.post_refund(ride, "refund", "{}")
                .await
                .assert_status(201);
        }
        drop(plain);

        let mut armed = WORKER.to_vec();
        armed.push(("RIDEPAY_CRASH_AT", point));
        let mut server = ServerProcess::start(&app.database_url, &armed);
        let status = server.wait_for_exit(Duration::from_secs(30));
        assert!(!status.success(), "{point}: {status:?}");
        let _restarted = ServerProcess::start(&app.database_url, &WORKER);
        let done = eventually(Duration::from_secs(30), || {
            app.count("transfers WHERE status = 'paid'") == 1
                && app.count("transfer_reversals WHERE status = 'reversed'") == i64::from(reversing)
        })
        .await;
        assert!(done, "{point}");
        assert_eq!(app.count("simulated_transfers"), 1, "{point}");
        assert_eq!(
            app.count("simulated_transfer_reversals"),
            i64::from(reversing),
            "{point}"
        );
        assert_exact(&app, point);
    }

    #[tokio::test]
    async fn after_transfers_claimed() {
        made_once_after_a_crash_at("after-transfers-claimed").await;
    }

    #[tokio::test]
    async fn after_transfer() {
        made_once_after_a_crash_at("after-transfer").await;
    }

    #[tokio::test]
    async fn after_reversals_claimed() {
        made_once_after_a_crash_at("after-reversals-claimed").await;
    }

    #[tokio::test]
    async fn after_reversal() {
        made_once_after_a_crash_at("after-reversal").await;
    }
}
