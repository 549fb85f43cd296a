//! `POST /api/webhook_endpoints` on the idempotency flow: the request
//! taken for the key, within the user's allowance of destinations
//! (Started); its host resolved and every address it names checked, holding
//! no connection (DestinationNamed); the destination written with a new
//! secret, or the refusal, stored.

use diesel::PgConnection;

use super::recovery_point::RecoveryPoint;
use super::request::DestinationParams;
use crate::context::ServiceContext;
use crate::idempotency::{CallOf, Called, Endpoint, Lease, Transition, TransitionOf};
use crate::service_error::{Refusal, ServiceError};
use crate::user_webhooks::model::{self, NewDestination, MAX_PER_USER};
use crate::user_webhooks::signing::new_secret;
use crate::wire;
use crate::wire::problem::{Problem, ProblemKind};

pub struct RegisterDestination;

/// What the destination's check found.
#[derive(Debug)]
pub enum Checked {
    /// Every address the host resolves to may be reached.
    Reachable,
    /// Why it may not be.
    Refused(String),
}

pub type CreateLease = Lease<RecoveryPoint>;

impl Endpoint for RegisterDestination {
    type Point = RecoveryPoint;
    type Params = DestinationParams;
    type Context = ServiceContext;
    type Known = ();
    type Answer = Checked;

    /// Started -> DestinationNamed: a user with all their destinations is
    /// refused here, nothing written, the key not consumed.
    fn start(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &CreateLease,
        _params: &DestinationParams,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        if model::lock_for_user(conn, lease.user_id())? >= MAX_PER_USER {
            return Err(limit_reached());
        }
        Ok(Transition::Advance(RecoveryPoint::DestinationNamed, ()))
    }

    /// A registration knows nothing but its request.
    fn load(
        _cx: &ServiceContext,
        _conn: &mut PgConnection,
        _lease: &CreateLease,
        _params: &DestinationParams,
        _point: RecoveryPoint,
    ) -> Result<(), ServiceError> {
        Ok(())
    }

    /// The host resolved and each address checked. Holds no connection. A
    /// check never ends in a failure saved elsewhere, so it has nothing to
    /// look up: it is made again.
    fn call(
        cx: &ServiceContext,
        _lease: &CreateLease,
        params: &DestinationParams,
        _point: RecoveryPoint,
        _known: (),
    ) -> Result<CallOf<Self>, ServiceError> {
        let policy = cx.destinations;
        let checked = policy
            .check_url(&params.url)
            .and_then(|url| policy.check_destination(&url));
        Ok(Called::Answered(
            (),
            match checked {
                Ok(()) => Checked::Reachable,
                Err(reason) => Checked::Refused(reason),
            },
        ))
    }

    /// DestinationNamed -> Finished: the destination (201, with its
    /// secret), or the refusal (422), stored.
    fn record(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &CreateLease,
        params: &DestinationParams,
        _known: (),
        checked: Checked,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        let refused = |kind: ProblemKind, detail: String| {
            Ok(Transition::Finish(wire::problem::stored(&Problem::new(
                kind, detail,
            ))))
        };
        if let Checked::Refused(reason) = checked {
            return refused(
                ProblemKind::WebhookDestinationNotAllowed,
                format!("url {reason}"),
            );
        }
        // Counted again under the lock: another key may have registered
        // one meanwhile.
        if model::lock_for_user(conn, lease.user_id())? >= MAX_PER_USER {
            return refused(ProblemKind::WebhookEndpointLimit, limit_detail());
        }
        let secret = new_secret();
        let endpoint = model::insert(
            conn,
            &NewDestination {
                user_id: lease.user_id(),
                idempotency_key_id: lease.key_id(),
                url: &params.url,
                events: &params.events,
                secret: &secret,
            },
        )?;
        Ok(Transition::Finish(wire::destination::created(
            &endpoint.json(true),
        )))
    }
}

fn limit_detail() -> String {
    format!("a user has at most {MAX_PER_USER} webhook endpoints; delete one first")
}

fn limit_reached() -> ServiceError {
    ServiceError::refused(Refusal::WebhookEndpointLimit, limit_detail())
}
