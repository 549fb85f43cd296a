//! `POST /api/webhook_endpoints` on the idempotency flow: the request
//! taken for the key, within the user's allowance of destinations
//! (Started); its host resolved and every address it names checked, holding
//! no connection (DestinationNamed); the destination written with a new
//! secret, or the refusal, stored.

use diesel::PgConnection;

use super::recovery_point::RecoveryPoint;
use super::request::WebhookEndpointParams;
use crate::context::ServiceContext;
use crate::idempotency::endpoint::Endpoint;
use crate::idempotency::flow::{Called, FoundOf, Phases, Transition};
use crate::idempotency::{Lease, StoredResponse};
use crate::outbound_webhooks::model::{self, NewWebhookEndpoint, MAX_PER_USER};
use crate::outbound_webhooks::signing::new_secret;
use crate::problem::{Problem, ProblemKind};
use crate::service_error::ServiceError;
use crate::wire;

pub struct WebhookEndpointCreate;

impl Endpoint for WebhookEndpointCreate {
    type Point = RecoveryPoint;
    type Params = WebhookEndpointParams;
    type Context = ServiceContext;
    type Phases<'a> = CreatePhases<'a>;

    fn phases<'a>(
        context: &'a ServiceContext,
        params: &'a WebhookEndpointParams,
    ) -> CreatePhases<'a> {
        CreatePhases { context, params }
    }
}

pub struct CreatePhases<'a> {
    context: &'a ServiceContext,
    params: &'a WebhookEndpointParams,
}

/// What the destination's check found.
#[derive(Debug)]
pub enum Checked {
    /// Every address the host resolves to may be reached.
    Reachable,
    /// Why it may not be.
    Refused(String),
}

pub type CreateLease = Lease<RecoveryPoint>;

impl Phases for CreatePhases<'_> {
    type Point = RecoveryPoint;
    type Known = ();
    type Answer = Checked;

    /// Started -> DestinationNamed: a user with all their destinations is
    /// refused here, nothing written, the key not consumed.
    fn atomic(
        &self,
        conn: &mut PgConnection,
        lease: &CreateLease,
        point: RecoveryPoint,
        _known: Option<()>,
    ) -> Result<Transition<RecoveryPoint, ()>, ServiceError> {
        match point {
            RecoveryPoint::Started => {
                if model::lock_for_user(conn, lease.user_id())? >= MAX_PER_USER {
                    return Err(limit_reached());
                }
                Ok(Transition::Advance(RecoveryPoint::DestinationNamed, None))
            }
            _ => Err(anyhow::anyhow!("no atomic phase runs from {point:?}").into()),
        }
    }

    /// The host resolved and each address checked. Holds no connection.
    fn call(
        &self,
        _lease: &CreateLease,
        _point: RecoveryPoint,
        _known: Option<()>,
    ) -> Result<Called<RecoveryPoint, (), Checked>, ServiceError> {
        let policy = self.context.destinations;
        let checked = policy
            .check_url(&self.params.url)
            .and_then(|url| policy.check_destination(&url));
        Ok(Called::Answered(
            (),
            match checked {
                Ok(()) => Checked::Reachable,
                Err(reason) => Checked::Refused(reason),
            },
        ))
    }

    /// A check never ends in a failure saved elsewhere: it is made again.
    fn look_up(
        &self,
        _lease: &CreateLease,
        point: RecoveryPoint,
        _known: Option<()>,
    ) -> Result<FoundOf<Self>, ServiceError> {
        Err(anyhow::anyhow!("a destination's check at {point:?} has nothing to look up").into())
    }

    /// DestinationNamed -> Finished: the destination (201, with its
    /// secret), or the refusal (422), stored.
    fn record(
        &self,
        conn: &mut PgConnection,
        lease: &CreateLease,
        _known: (),
        checked: Checked,
    ) -> Result<Transition<RecoveryPoint, ()>, ServiceError> {
        let refused = |kind: ProblemKind, detail: String| {
            Ok(Transition::Finish(StoredResponse::problem(&Problem::new(
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
            &NewWebhookEndpoint {
                user_id: lease.user_id(),
                idempotency_key_id: lease.key_id(),
                url: &self.params.url,
                events: &self.params.events,
                secret: &secret,
            },
        )?;
        Ok(Transition::Finish(wire::webhook_endpoint::created(
            &endpoint.json(true),
        )))
    }
}

fn limit_detail() -> String {
    format!("a user has at most {MAX_PER_USER} webhook endpoints; delete one first")
}

fn limit_reached() -> ServiceError {
    ServiceError::refused(ProblemKind::WebhookEndpointLimit, limit_detail())
}
