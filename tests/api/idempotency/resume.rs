//! A key left mid-way, the way a crash leaves it (lease still held), is
//! finished by a retry once the lease has expired: one ride, one payment.

use ridepay::idempotency::{self, Claim, Lease};
use ridepay::rides::create as phases;
use ridepay::rides::create::RecoveryPoint;
use ridepay::service_error::ServiceError;

use crate::common::app::{spawn_app, TestApp, RIDE};
use crate::common::keys::{expire_leases, leave_key_at, RideRequest, POLICY};

async fn assert_retry_finishes(app: &TestApp, key: &str, point: RecoveryPoint) {
    let intent = leave_key_at(app, key, point);
    // While the crashed holder's lease is young, it is respected.
    app.post_ride(key, RIDE)
        .await
        .assert_problem(409, "idempotency-key-in-use");
    expire_leases(app);

    let answer = app.post_ride(key, RIDE).await;

    assert_eq!(
        answer.status,
        201,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert_eq!(app.counts(), (1, 1, 1));
    if let Some(intent) = intent {
        assert_eq!(answer.json()["payment_intent_id"], intent.id);
    }
    assert_eq!(app.key_state(key)["lease_epoch"], 2);
    let replay = app.post_ride(key, RIDE).await;
    assert_eq!(replay.body, answer.body);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
}

#[tokio::test]
async fn a_key_left_at_started_is_finished_by_a_retry() {
    let app = spawn_app().await;
    assert_retry_finishes(&app, "at-started", RecoveryPoint::Started).await;
}

#[tokio::test]
async fn a_key_left_at_ride_created_is_finished_by_a_retry() {
    let app = spawn_app().await;
    assert_retry_finishes(&app, "at-ride-created", RecoveryPoint::RideCreated).await;
}

#[tokio::test]
async fn a_key_left_at_charge_completed_is_finished_by_a_retry_without_a_new_payment() {
    let app = spawn_app().await;
    assert_retry_finishes(&app, "at-charge-completed", RecoveryPoint::ChargeCompleted).await;
}

#[tokio::test]
async fn a_holder_whose_lease_was_taken_over_is_fenced_off() {
    let app = spawn_app().await;
    let mut conn = app.db();
    let ride = RideRequest::new(&app, "fenced");
    let (request, params) = (ride.claimable(), &ride.params);
    let claim = |conn: &mut diesel::PgConnection| -> Lease<RecoveryPoint> {
        match idempotency::claim::<RecoveryPoint>(conn, &request, &POLICY).unwrap() {
            Claim::Acquired(lease) => lease,
            other => panic!("expected the lease, got {other:?}"),
        }
    };
    let mut stale = claim(&mut conn);
    expire_leases(&app);
    let taker = claim(&mut conn);
    assert_eq!((stale.epoch(), taker.epoch()), (1, 2));

    // The phase's work, then its fenced commit, as the flow runs them.
    let refused = idempotency::in_transaction(&mut conn, &mut stale, |conn, lease| {
        phases::create_ride(conn, lease, params, crate::common::gateway::RETURN_URL)?;
        lease.advance(conn, RecoveryPoint::RideCreated)
    });

    assert!(
        matches!(refused, Err(ServiceError::LeaseLost)),
        "{refused:?}"
    );
    // The refused phase rolled back: no ride, and the stale lease still
    // believes it is at Started.
    assert_eq!(stale.recovery_point(), RecoveryPoint::Started);
    assert_eq!(app.counts(), (0, 0, 1));
    assert_eq!(app.key_state("fenced")["recovery_point"], "started");
}
