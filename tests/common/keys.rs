//! Key rows made and moved by hand, as a crash at a recovery point leaves
//! them.
use std::sync::Arc;
use std::time::Duration;

use diesel::{Connection, PgConnection, RunQueryDsl};
use ridepay::config::SimulatedGatewaySettings;
use ridepay::context::ServiceContext;
use ridepay::db::DbPool;
use ridepay::idempotency::{
    self, CanonicalRequest, Claim, Fingerprint, GatewayCalls, IdempotencyKey, IdempotentRequest,
    KeyPolicy, RidepayKey,
};
use ridepay::ids::UserId;
use ridepay::payments::{self, Final, PaymentIntent};
use ridepay::rides::create as phases;
use ridepay::rides::create::RecoveryPoint;
use ridepay::rides::create::RideParams;
use ridepay::service_error::ServiceError;
use ridepay::startup::Installation;
use ridepay_doubles::SimulatedGateway;

use super::app::{Answer, TestApp, RIDE};
use super::gateway::RETURN_URL;

pub const POLICY: KeyPolicy = KeyPolicy {
    lease_timeout: Duration::from_secs(30),
    effect_deadline: Duration::from_secs(12 * 3600),
};

/// The random public id of user `user_id`.
pub fn public_id(conn: &mut PgConnection, user_id: i64) -> uuid::Uuid {
    use diesel::prelude::*;
    use ridepay::schema::users;
    users::table
        .find(user_id)
        .select(users::public_id)
        .first(conn)
        .unwrap()
}

/// `RIDE` under `key` for the app's user, as the claim sees it.
pub struct RideRequest {
    pub user_id: i64,
    user_public_id: uuid::Uuid,
    installation: uuid::Uuid,
    pub key: IdempotencyKey,
    pub params: RideParams,
    canonical: CanonicalRequest,
}

impl RideRequest {
    pub fn new(app: &TestApp, key: &str) -> RideRequest {
        Self::with_body(app, key, RIDE)
    }

    /// `body` under `key`.
    pub fn with_body(app: &TestApp, key: &str, body: &str) -> RideRequest {
        let params = RideParams::parse(body.as_bytes()).unwrap();
        let mut conn = app.db();
        RideRequest {
            user_id: app.user.id,
            user_public_id: public_id(&mut conn, app.user.id),
            installation: ridepay::startup::Installation::load(&mut conn).unwrap().id,
            key: IdempotencyKey::parse(key.as_bytes()).unwrap(),
            canonical: params.canonical(),
            params,
        }
    }

    /// What the request's gateway calls are derived from.
    pub fn ridepay_key(&self) -> RidepayKey {
        let fingerprint = Fingerprint::compute("POST", "/api/rides", self.canonical.as_bytes());
        RidepayKey::of(
            self.installation,
            self.user_public_id,
            &self.key,
            &fingerprint,
        )
    }

    /// The gateway key of its PaymentIntent's create, in generation 0.
    pub fn payment_key(&self) -> String {
        let calls = GatewayCalls::first(self.ridepay_key());
        payments::gateway_key(calls, phases::PAYMENT_KEY_PURPOSE)
    }

    /// The same, as a key of call version `version` derives it.
    pub fn payment_key_of_version(&self, version: i16) -> String {
        let calls = GatewayCalls {
            version,
            ..GatewayCalls::first(self.ridepay_key())
        };
        payments::gateway_key(calls, phases::PAYMENT_KEY_PURPOSE)
    }

    pub fn claimable(&self) -> IdempotentRequest<'_> {
        let caller = ridepay::idempotency::Requester {
            id: UserId(self.user_id),
            public_id: self.user_public_id,
            role: ridepay::users::Role::Rider,
        };
        IdempotentRequest::post(
            caller,
            self.installation,
            &self.key,
            "/api/rides",
            &self.canonical,
        )
    }
}

/// Runs the real phases up to `point` and stops there, lease held, as a process
/// killed at that moment would. Returns the PaymentIntent made, if any.
pub fn leave_key_at(app: &TestApp, key: &str, point: RecoveryPoint) -> Option<PaymentIntent> {
    let mut conn = app.db();
    let cx = app.service_context();
    let ride = RideRequest::new(app, key);
    let (request, params) = (ride.claimable(), &ride.params);
    let mut lease = conn
        .transaction(|conn| {
            let Claim::Acquired(mut lease) =
                idempotency::claim::<RecoveryPoint>(conn, &request, &POLICY)?
            else {
                panic!("a new key is claimable");
            };
            if point != RecoveryPoint::Started {
                phases::create_ride(conn, &lease, params, &cx)?;
                lease.advance(conn, RecoveryPoint::RideCreated)?;
            }
            Ok::<_, ServiceError>(lease)
        })
        .unwrap();
    if point != RecoveryPoint::ChargeCompleted {
        return None;
    }
    let ride = ridepay::rides::model::find_by_key(&mut conn, lease.key_id()).unwrap();
    let intent = phases::pay(cx.gateway.as_ref(), cx.installation_id, &lease, &ride).unwrap();
    idempotency::in_transaction(&mut conn, &mut lease, |conn, lease| {
        let Final::Made(_) = phases::record_payment(conn, &ride, &intent)? else {
            panic!("the simulated gateway authorizes the test card");
        };
        lease.advance(conn, RecoveryPoint::ChargeCompleted)
    })
    .unwrap();
    Some(intent)
}

/// What two holders of one key's lease, the second taking it over while the
/// first waits on the gateway, must end with: the first's commit fenced off
/// (503), and one ride and one payment once a retry finishes the key. The
/// taker may be fenced off too, by the gateway's own event, which takes the
/// lease of a ride whose holder looks gone to settle it.
pub async fn assert_takeover_fenced(app: &TestApp, key: &str, first: Answer, second: Answer) {
    first.assert_problem(503, "service-unavailable");
    if second.status != 201 {
        second.assert_problem(503, "service-unavailable");
    }
    let finished = app.post_ride(key, RIDE).await;
    assert_eq!(finished.status, 201);
    if second.status == 201 {
        assert_eq!(finished.body, second.body);
    }
    assert_eq!(app.counts(), (1, 1, 1));
}

/// Moves the lease back in time past its timeout, as waiting would.
pub fn expire_leases(app: &TestApp) {
    diesel::sql_query("UPDATE idempotency_keys SET locked_at = now() - interval '1 hour'")
        .execute(&mut app.db())
        .unwrap();
}

/// The service's context on `pool`, its simulated gateway with `faults`:
/// for tests that drive the steps, the completer or a worker in process.
pub fn service_context(pool: DbPool, faults: SimulatedGatewaySettings) -> ServiceContext {
    let installation = Installation::load(&mut pool.get().unwrap()).unwrap();
    ServiceContext {
        gateway: Arc::new(SimulatedGateway::new(pool.clone(), faults)),
        pool,
        key_policy: POLICY,
        installation_id: installation.id,
        id_secret: installation.id_secret,
        return_url: RETURN_URL.to_owned(),
        destinations: ridepay::http_client::destination::DestinationPolicy {
            allow_loopback: true,
        },
        drivers: ridepay::config::DriverContext {
            country: "US".to_owned(),
            commission_bps: 2000,
            pages: "http://127.0.0.1:9/drivers/onboarding".to_owned(),
            livemode: false,
            status_max_age: std::time::Duration::from_secs(300),
            claim: std::time::Duration::from_secs(60),
            transfers_due: Default::default(),
        },
    }
}
