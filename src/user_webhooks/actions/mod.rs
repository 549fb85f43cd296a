//! The actions on one of the caller's destinations that a POST asks for,
//! each an idempotent endpoint of its own, written whole in the claim's
//! transaction: a delivery sent again (`retry`), the secret rolled
//! (`roll_secret`), a test event sent (`test_event`). `Action<A>` is the
//! endpoint each is, on the idempotency flow: another user's destination is
//! a 404 before the key is looked at; the action written (Started); its
//! answer stored.

pub mod retry;
pub mod roll_secret;
pub mod test_event;

use std::marker::PhantomData;

use diesel::PgConnection;
use serde::{Deserialize, Serialize};

use crate::context::ServiceContext;
use crate::idempotency::{
    Endpoint, Lease, RecoveryPoints, StoredResponse, Transition, TransitionOf,
};
use crate::ids::UserId;
use crate::public_ids::{DeliveryPublicId, DestinationPublicId, PathId};
use crate::service_error::ServiceError;
use crate::user_webhooks::model;
use crate::validation::{parse_body, FieldError};
use crate::wire;
use crate::wire::destination::EmptyBody;

/// What an action is on: a destination, and for a retry its delivery. Its
/// JSON form is the canonical request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionParams {
    // In sorted order, as the canonical form needs.
    pub delivery_id: Option<PathId<DeliveryPublicId>>,
    pub endpoint_id: PathId<DestinationPublicId>,
}

impl ActionParams {
    /// The path names what the action is on; the body, if any, is `{}`.
    pub fn parse(
        endpoint_id: PathId<DestinationPublicId>,
        delivery_id: Option<PathId<DeliveryPublicId>>,
        body: &[u8],
    ) -> Result<ActionParams, Vec<FieldError>> {
        if !body.iter().all(u8::is_ascii_whitespace) {
            parse_body::<EmptyBody>(body, |_| None).map_err(|err| vec![err])?;
        }
        Ok(ActionParams {
            delivery_id,
            endpoint_id,
        })
    }
}

/// One action: its recovery points, the change it writes and the answer.
pub trait DestinationAction: Send + Sync + 'static {
    type Point: RecoveryPoints;
    /// Where the key stands once the change is written.
    const WRITTEN: Self::Point;

    /// The change, in the claim's transaction; `false` when what it is on
    /// does not exist (a 404, nothing written).
    fn write(
        conn: &mut PgConnection,
        user: UserId,
        params: &ActionParams,
    ) -> Result<bool, ServiceError>;

    /// The answer to store, once written.
    fn answer(
        conn: &mut PgConnection,
        user: UserId,
        params: &ActionParams,
    ) -> Result<StoredResponse, ServiceError>;
}

/// The endpoint an action is.
pub struct Action<A>(PhantomData<A>);

impl<A: DestinationAction> Endpoint for Action<A> {
    type Point = A::Point;
    type Params = ActionParams;
    type Context = ServiceContext;
    type Known = ();
    type Answer = ();

    /// Started -> the action written.
    fn start(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &Lease<A::Point>,
        params: &ActionParams,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        match A::write(conn, lease.user_id(), params)? {
            true => Ok(Transition::Advance(A::WRITTEN, ())),
            false => Err(ServiceError::NotFound),
        }
    }

    /// An action knows nothing but its request.
    fn load(
        _cx: &ServiceContext,
        _conn: &mut PgConnection,
        _lease: &Lease<A::Point>,
        _params: &ActionParams,
        _point: A::Point,
    ) -> Result<(), ServiceError> {
        Ok(())
    }

    /// Written -> Finished: the answer stored.
    fn atomic(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &Lease<A::Point>,
        params: &ActionParams,
        _point: A::Point,
        _known: (),
    ) -> Result<TransitionOf<Self>, ServiceError> {
        Ok(Transition::Finish(A::answer(
            conn,
            lease.user_id(),
            params,
        )?))
    }

    /// Another user's destination is not found, before the key is looked at.
    fn admit(
        conn: &mut PgConnection,
        user: UserId,
        params: &ActionParams,
    ) -> Result<(), ServiceError> {
        destination(conn, user, params).map(drop)
    }
}

/// The user's destination the action is on.
fn destination(
    conn: &mut PgConnection,
    user: UserId,
    params: &ActionParams,
) -> Result<model::Destination, ServiceError> {
    model::find_for_user(conn, user, params.endpoint_id)?.ok_or(ServiceError::NotFound)
}

/// A delivery to the destination as the answer.
fn delivery_answer(
    conn: &mut PgConnection,
    destination: &model::Destination,
    delivery: PathId<DeliveryPublicId>,
) -> Result<StoredResponse, ServiceError> {
    let delivery =
        super::deliveries::find(conn, destination.id, delivery)?.ok_or(ServiceError::NotFound)?;
    Ok(wire::answer::ok(
        serde_json::to_vec(&delivery).expect("a delivery always serialises"),
    ))
}
