//! An idempotent endpoint as the machinery sees it: one trait, implemented
//! by the endpoint's own type, whose steps take the context and the
//! request as arguments. Its recovery points name it; `start` runs in the
//! claim's transaction; what the steps learn of the request's rows
//! (`Known`) is handed from each step to the next by value, and read once,
//! by `load`, when a key resumes from the database. Steps an endpoint does
//! not have need not be written: the flow never asks for them. Given those,
//! `flow::serve` serves a request and `resume::KeyRows` lets the completer and
//! reconciliation finish the endpoint's keys from their stored request.

use diesel::PgConnection;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::existing_key::KeyPolicy;
use super::finishing::Finishing;
use super::found::Found;
use super::key_row::StoredResponse;
use super::lease::Lease;
use super::recovery_point::RecoveryPoints;
use crate::db::DbPool;
use crate::ids::UserId;
use crate::service_error::ServiceError;
use crate::users::Role;

/// What the flow needs of the context an endpoint's steps work with.
pub trait FlowContext: Send + Sync {
    fn pool(&self) -> &DbPool;
    fn key_policy(&self) -> &KeyPolicy;
    /// This database's installation id, part of every key's `RidepayKey`.
    fn installation_id(&self) -> uuid::Uuid;
}

/// What a step ends with. The flow writes it to the key row, fenced, once
/// at the end of the step's transaction (as rocket-rides-atomic's
/// `atomic_phase` does with its step's result).
#[derive(Debug)]
pub enum Transition<P, K> {
    /// The request reached this recovery point, and what the steps know.
    Advance(P, K),
    /// The request's answer, to store: the key is finished.
    Finish(StoredResponse),
}

/// What a call came to.
#[derive(Debug)]
pub enum Called<P, K, A> {
    /// The gateway gave a final answer: [`Endpoint::record`] records the
    /// answer (`A`), with what the steps know (`K`).
    Answered(K, A),
    /// Nothing needed calling from this point (a hold that already covers
    /// the fare needs no raising), so there is nothing to record: the flow
    /// goes straight on to this point's step, with no transaction and the
    /// key left where it is. A resume from there decides the same.
    NotNeeded(P, K),
}

/// A step's result, for endpoint `E`.
pub type TransitionOf<E> = Transition<<E as Endpoint>::Point, <E as Endpoint>::Known>;
/// A call's result, for endpoint `E`.
pub type CallOf<E> =
    Called<<E as Endpoint>::Point, <E as Endpoint>::Known, <E as Endpoint>::Answer>;
/// A lookup's result, for endpoint `E`.
pub type FoundOf<E> = Found<<E as Endpoint>::Known, <E as Endpoint>::Answer>;
/// The lease on one of `E`'s keys.
pub type LeaseOf<E> = Lease<<E as Endpoint>::Point>;

/// An idempotent endpoint: its recovery points, its request, and its steps,
/// one per recovery point, as the point's [`Step`](super::Step) says: an
/// atomic step, in a transaction; or a call to the outside world, holding
/// no connection, then `record`, in a transaction, of what it answered.
pub trait Endpoint: Sized + 'static {
    type Point: RecoveryPoints;
    /// The validated request; its canonical form is what the key stores.
    type Params: Serialize + DeserializeOwned + Send + Sync;
    type Context: FlowContext;
    /// What the steps know of the request's rows (the ride they wrote), so
    /// that no step reads back what the one before had.
    type Known;
    /// What a call answered, by value, for the step that records it.
    type Answer;

    /// The step from Started, in the claim's transaction: a request the
    /// endpoint refuses here rolls the claim back too, and the key is not
    /// consumed.
    fn start(
        cx: &Self::Context,
        conn: &mut PgConnection,
        lease: &LeaseOf<Self>,
        params: &Self::Params,
    ) -> Result<TransitionOf<Self>, ServiceError>;

    /// What the steps know at `point` (past Started), read once when a key
    /// resumes there from the database.
    fn load(
        cx: &Self::Context,
        conn: &mut PgConnection,
        lease: &LeaseOf<Self>,
        params: &Self::Params,
        point: Self::Point,
    ) -> Result<Self::Known, ServiceError>;

    /// The atomic step from `point`, past Started, in the caller's
    /// transaction.
    fn atomic(
        _cx: &Self::Context,
        _conn: &mut PgConnection,
        _lease: &LeaseOf<Self>,
        _params: &Self::Params,
        point: Self::Point,
        _known: Self::Known,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        Err(no_step::<Self>("atomic step", point))
    }

    /// The call made from `point`, holding no connection. An error leaves
    /// the key at `point`, for a retry that makes the same call under the
    /// same derived key.
    fn call(
        _cx: &Self::Context,
        _lease: &LeaseOf<Self>,
        _params: &Self::Params,
        point: Self::Point,
        _known: Self::Known,
    ) -> Result<CallOf<Self>, ServiceError> {
        Err(no_step::<Self>("call", point))
    }

    /// The atomic step that records what a call answered, in the caller's
    /// transaction: the answer says which call it was.
    fn record(
        _cx: &Self::Context,
        _conn: &mut PgConnection,
        lease: &LeaseOf<Self>,
        _params: &Self::Params,
        _known: Self::Known,
        _answer: Self::Answer,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        Err(no_step::<Self>("record", lease.recovery_point()))
    }

    /// What the call from `point` made, found in the gateway's lists (never
    /// its search alone, which may lag), for a call answered by a failure
    /// the gateway saved under its key. Holds no connection while the
    /// gateway is asked. An error proves nothing either way.
    fn look_up(
        _cx: &Self::Context,
        _lease: &LeaseOf<Self>,
        _params: &Self::Params,
        point: Self::Point,
        _known: Self::Known,
    ) -> Result<FoundOf<Self>, ServiceError> {
        Err(no_step::<Self>("lookup", point))
    }

    /// The recording of `answer` when it finishes the key with one change
    /// whose answer is known before the change is sent: the flow sends the
    /// change with the key's final write as one statement, with no
    /// transaction around it (`Finishing`). `None`, the default, runs
    /// `record` in a transaction.
    fn finishing(
        _cx: &Self::Context,
        _lease: &LeaseOf<Self>,
        _known: &Self::Known,
        _answer: &Self::Answer,
    ) -> Result<Option<Finishing>, ServiceError> {
        Ok(None)
    }

    /// Whose keys may make the request (a ride is a rider's to ask for).
    const CALLERS: &'static [Role] = &[Role::Rider, Role::Platform];

    /// What is checked before the key is even looked at (nothing, unless an
    /// endpoint says): another user's resource is a 404 whatever the key, so
    /// a key's state reveals nothing about it.
    fn admit(
        _conn: &mut PgConnection,
        _user: UserId,
        _params: &Self::Params,
    ) -> Result<(), ServiceError> {
        Ok(())
    }
}

/// The flow asked `E` for a step its recovery points do not give it: a
/// recovery point declared without its step.
fn no_step<E: Endpoint>(step: &str, point: E::Point) -> ServiceError {
    anyhow::anyhow!(
        "{} has no {step} from {}",
        E::Point::ENDPOINT,
        point.as_str()
    )
    .into()
}
