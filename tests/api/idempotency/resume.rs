//! A key left mid-way, the way a crash leaves it (lease still held), is
//! finished by a retry once the lease has expired: one ride, one payment.

use ridepay::idempotency::{self, Claim, Lease};
use ridepay::rides::create as phases;
use ridepay::rides::create::{RecoveryPoint, RideEndpoint};
use ridepay::service_error::ServiceError;

use crate::common::app::{spawn_app, TestApp, RIDE};
use crate::common::database::sql;
use crate::common::keys::{expire_leases, leave_key_at, RideRequest, POLICY};

async fn assert_retry_finishes(app: &TestApp, key: &str, point: RecoveryPoint) {
    let intent = leave_key_at(app, key, point);
    // While the crashed holder's lease is young, it is respected.
    app.post_ride(key, RIDE)
        .await
        .assert_problem(409, "idempotency-key-in-use");
    expire_leases(app);
    let crashed_epoch = app.key_state(key)["lease_epoch"].clone();

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
    assert_ne!(app.key_state(key)["lease_epoch"], crashed_epoch);
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
    assert_ne!(stale.epoch(), taker.epoch());

    // The phase's work, then its fenced commit, as the flow runs them.
    let refused = idempotency::in_transaction(&mut conn, &mut stale, |conn, lease| {
        phases::create_ride(conn, lease, params, &app.service_context())?;
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

/// A failover that loses commits may hand a lost key row's id to another
/// request's row, at the same recovery point: the lost row's holder, still
/// waiting on the gateway, must find its lease gone, never commit a step to
/// a key that is not its own.
#[tokio::test]
async fn a_holder_of_a_key_lost_in_a_failover_is_fenced_off_a_new_key_with_its_id() {
    let app = spawn_app().await;
    let mut conn = app.db();
    let cx = app.service_context();
    let (lost, other) = (
        RideRequest::new(&app, "lost"),
        RideRequest::new(&app, "other"),
    );
    let to_ride_created = |conn: &mut diesel::PgConnection, ride: &RideRequest| {
        let mut lease =
            match idempotency::claim::<RecoveryPoint>(conn, &ride.claimable(), &POLICY).unwrap() {
                Claim::Acquired(lease) => lease,
                other => panic!("expected the lease, got {other:?}"),
            };
        idempotency::in_transaction(conn, &mut lease, |conn, lease| {
            phases::create_ride(conn, lease, &ride.params, &cx)?;
            lease.advance(conn, RecoveryPoint::RideCreated)
        })
        .unwrap();
        lease
    };
    let mut stale = to_ride_created(&mut conn, &lost);
    // What the promoted standby never received, and its sequences behind.
    sql(&mut conn, "DELETE FROM rides");
    sql(&mut conn, "DELETE FROM idempotency_keys");
    sql(
        &mut conn,
        &format!(
            "ALTER SEQUENCE idempotency_keys_id_seq RESTART WITH {}",
            stale.key_id()
        ),
    );
    let taker = to_ride_created(&mut conn, &other);
    assert_eq!(taker.key_id(), stale.key_id());

    let refused = idempotency::in_transaction(&mut conn, &mut stale, |conn, lease| {
        lease.advance(conn, RecoveryPoint::ChargeCompleted)
    });

    assert!(
        matches!(refused, Err(ServiceError::LeaseLost)),
        "{refused:?}"
    );
    assert_eq!(app.key_state("other")["recovery_point"], "ride_created");
    // Resuming, it reads nothing of the other key's to call the gateway
    // with: its lease is checked first.
    let driven = idempotency::drive::<RideEndpoint>(&cx, stale, &lost.params);
    assert!(matches!(driven, Err(ServiceError::LeaseLost)), "{driven:?}");
    assert_eq!(app.count("simulated_payment_intents"), 0);
}
