//! `POST /api/rides/{id}/refunds` on the idempotency flow: the refund,
//! pending, its amount reserved (Started); the gateway refund, made between
//! transactions (RefundCreated); what the gateway answered, recorded
//! (RefundCompleted); the answer stored. A retry, or the completer, resumes
//! from the recovery point the key reached.
//!
//! Locks: the claim locks the key before `create_refund` locks the ride. A
//! later transaction locks the ride, then writes its key, whose lease it
//! holds; the only other transaction that may lock that key is a claim taking
//! an expired lease over, and a claim of a key past `started` takes no ride
//! lock. So no two requests wait on each other in a cycle.

use diesel::{OptionalExtension, PgConnection};
use serde_json::json;

use super::model::{self, NewRefund, Refund, RefundStatus};
use super::recovery_point::RecoveryPoint;
use super::request::RefundParams;
use crate::audit;
use crate::context::ServiceContext;
use crate::idempotency::endpoint::Endpoint;
use crate::idempotency::flow::{Called, Found, FoundOf, Phases, Transition};
use crate::idempotency::{Lease, StoredResponse};
use crate::ids::UserId;
use crate::payments::{
    self, call_metadata, derived_key, lookup, Final, GatewayError, PaymentGateway, RefundRequest,
};
use crate::problem::{Problem, ProblemKind};
use crate::rides;
use crate::rides::model::{Ride, RideStatus};
use crate::service_error::ServiceError;
use crate::wire;

/// The endpoint (`endpoint::run::<RefundEndpoint>` serves a request,
/// `endpoint::Keys<RefundEndpoint>` its keys for the completer).
pub struct RefundEndpoint;

impl Endpoint for RefundEndpoint {
    type Point = RecoveryPoint;
    type Params = RefundParams;
    type Context = ServiceContext;
    type Phases<'a> = RefundPhases<'a>;

    fn phases<'a>(context: &'a ServiceContext, params: &'a RefundParams) -> RefundPhases<'a> {
        RefundPhases { context, params }
    }

    /// Another user's ride is not found, before the key is even looked at,
    /// so nothing about it (not even a key's state) is revealed.
    fn admit(
        conn: &mut PgConnection,
        user: UserId,
        params: &RefundParams,
    ) -> Result<(), ServiceError> {
        rides::model::find_for_user(conn, user, params.ride_id)?
            .map(drop)
            .ok_or(ServiceError::NotFound)
    }
}

/// The endpoint's phases, for one request. They hand on the refund as the
/// first leaves it.
pub struct RefundPhases<'a> {
    context: &'a ServiceContext,
    params: &'a RefundParams,
}

impl Phases for RefundPhases<'_> {
    type Point = RecoveryPoint;
    type Known = Refund;
    type Answer = Final<payments::Refund>;

    fn atomic(
        &self,
        conn: &mut PgConnection,
        lease: &RefundLease,
        point: RecoveryPoint,
        _refund: Option<Refund>,
    ) -> Result<Transition<RecoveryPoint, Refund>, ServiceError> {
        match point {
            // A refund not allowed is refused here, which rolls the claim
            // back too: nothing is written, the key not consumed.
            RecoveryPoint::Started => Ok(Transition::Advance(
                RecoveryPoint::RefundCreated,
                Some(create_refund(conn, lease, self.params)?),
            )),
            RecoveryPoint::RefundCompleted => Ok(Transition::Finish(finish_refunded(conn, lease)?)),
            RecoveryPoint::RefundCreated | RecoveryPoint::Finished => {
                Err(anyhow::anyhow!("no atomic phase runs from {point:?}").into())
            }
        }
    }

    fn call(
        &self,
        lease: &RefundLease,
        _point: RecoveryPoint,
        refund: Option<Refund>,
    ) -> Result<Called<RecoveryPoint, Refund, Final<payments::Refund>>, ServiceError> {
        let (ride, refund) = self.with_ride(lease, refund)?;
        // No pooled connection is held while the gateway works.
        let answer = refund_at_gateway(
            self.context.gateway.as_ref(),
            self.context.installation_id,
            lease,
            &ride,
            &refund,
        );
        Ok(Called::Answered(refund, payments::final_answer(answer)?))
    }

    /// Any generation's refund, from the payment's refunds.
    fn look_up(
        &self,
        lease: &RefundLease,
        _point: RecoveryPoint,
        refund: Option<Refund>,
    ) -> Result<FoundOf<Self>, ServiceError> {
        let (ride, refund) = self.with_ride(lease, refund)?;
        let Some(payment) = ride.payment() else {
            return Err(anyhow::anyhow!("ride {} has no payment to refund", ride.id).into());
        };
        let call = refund_metadata(self.context.installation_id, lease, &ride, &refund);
        let made = lookup::refund_made(self.context.gateway.as_ref(), &payment, &call)?;
        Ok(match made {
            Some(made) => Found::Made(refund, Final::Made(made)),
            None => Found::Absent {
                known: refund,
                refused: Final::Refused(lookup::never_made()),
            },
        })
    }

    /// RefundCreated -> RefundCompleted, or Finished for a refund the
    /// gateway refused for good.
    fn record(
        &self,
        conn: &mut PgConnection,
        _lease: &RefundLease,
        refund: Refund,
        answer: Final<payments::Refund>,
    ) -> Result<Transition<RecoveryPoint, Refund>, ServiceError> {
        match answer {
            Final::Made(made) => {
                record_refund(conn, &refund, &made)?;
                Ok(Transition::Advance(RecoveryPoint::RefundCompleted, None))
            }
            Final::Refused(failure) => {
                Ok(Transition::Finish(finish_failed(conn, &refund, &failure)?))
            }
        }
    }
}

impl RefundPhases<'_> {
    /// The refund the key made (read, unless handed on) and its ride.
    fn with_ride(
        &self,
        lease: &RefundLease,
        refund: Option<Refund>,
    ) -> Result<(Ride, Refund), ServiceError> {
        let mut conn = self.context.pool.get()?;
        let refund = match refund {
            Some(refund) => refund,
            None => model::find_by_key(&mut conn, lease.key_id())?,
        };
        Ok((rides::model::find_ride(&mut conn, refund.ride_id)?, refund))
    }
}

/// Names this endpoint's effect in its derived gateway keys.
pub const REFUND_KEY_PURPOSE: &str = "ride-refund";

pub type RefundLease = Lease<RecoveryPoint>;

/// Started -> RefundCreated: under the ride's row lock, the refund (pending)
/// with its amount reserved, and its audit record. A refund that is not
/// allowed fails here, which rolls back the claim in the same transaction:
/// nothing is written and the key is not consumed.
fn create_refund(
    conn: &mut PgConnection,
    lease: &RefundLease,
    params: &RefundParams,
) -> Result<Refund, ServiceError> {
    let ride = model::lock_ride(conn, params.ride_id)
        .optional()?
        .filter(|ride| ride.user_id == lease.user_id())
        .ok_or(ServiceError::NotFound)?;
    // A captured ride, or a cancelled one whose fee was captured.
    let paid = ride.status == RideStatus::Captured
        || (ride.status == RideStatus::Canceled && ride.amount_captured_cents > 0);
    if !paid {
        return Err(ServiceError::refused(
            ProblemKind::RefundNotAllowed,
            format!(
                "ride {} is {}; only what was captured can be refunded",
                ride.id, ride.status
            ),
        ));
    }
    let remaining = model::remaining_cents(conn, &ride)?;
    let amount = params.amount_cents.unwrap_or(remaining);
    if remaining <= 0 || amount > remaining {
        return Err(ServiceError::refused(
            ProblemKind::RefundNotAllowed,
            format!(
                "{amount} is more than the {remaining} that remains to refund of ride {} \
             (refunds in progress count against it)",
                ride.id
            ),
        ));
    }
    let refund = model::insert(
        conn,
        &NewRefund {
            ride_id: ride.id,
            user_id: lease.user_id(),
            idempotency_key_id: Some(lease.key_id()),
            amount_cents: amount,
            currency: &ride.currency,
            reason: params.reason.as_deref(),
            status: RefundStatus::Pending,
            gateway_refund_id: None,
        },
    )?;
    audit::record(
        conn,
        lease.user_id(),
        "refund.created",
        "refund",
        refund.id.0,
        json!({ "idempotency_key_id": lease.key_id(), "ride_id": ride.id, "amount_cents": amount }),
    )?;
    Ok(refund)
}

/// The gateway refund, under a key derived from the key row: a retry after a
/// timeout or a crash asks for the same refund and gets it, never a second
/// one. Holds no database connection.
fn refund_at_gateway(
    gateway: &dyn PaymentGateway,
    installation_id: uuid::Uuid,
    lease: &RefundLease,
    ride: &Ride,
    refund: &Refund,
) -> Result<payments::Refund, GatewayError> {
    let payment = ride.payment().ok_or_else(|| GatewayError::Rejected {
        message: format!("ride {} has no payment to refund", ride.id),
    })?;
    gateway.refund(&RefundRequest {
        idempotency_key: derived_key(installation_id, lease.gateway_calls(), REFUND_KEY_PURPOSE),
        payment,
        amount_cents: refund.amount_cents,
        reason: refund.reason.clone(),
        metadata: refund_metadata(installation_id, lease, ride, refund),
    })
}

/// The metadata of the gateway refund: how a webhook tells ridepay's own
/// refunds from refunds made elsewhere (the dashboard, say), and how
/// reconciliation finds it.
fn refund_metadata(
    installation_id: uuid::Uuid,
    lease: &RefundLease,
    ride: &Ride,
    refund: &Refund,
) -> Vec<(String, String)> {
    call_metadata(installation_id, lease.gateway_calls(), || {
        vec![
            ("ride_id", ride.id.to_string()),
            ("refund_id", refund.id.to_string()),
            ("idempotency_key_id", lease.key_id().to_string()),
        ]
    })
}

/// RefundCreated -> RefundCompleted: the gateway refund recorded in the
/// status the gateway gave it: succeeded, it is added to the ride's
/// refunded amount (its reservation becomes a refund); pending, it stays
/// reserved until an event settles it.
fn record_refund(
    conn: &mut PgConnection,
    refund: &Refund,
    made: &payments::Refund,
) -> Result<(), ServiceError> {
    if (made.amount_cents, made.currency.as_str())
        != (refund.amount_cents, refund.currency.as_str())
    {
        return Err(ServiceError::Internal(anyhow::anyhow!(
            "gateway refund {} is for {} {}, refund {} for {} {}",
            made.id,
            made.amount_cents,
            made.currency,
            refund.id.0,
            refund.amount_cents,
            refund.currency
        )));
    }
    model::lock_ride(conn, refund.ride_id)?;
    model::follow(conn, refund, made.status, &made.id)?;
    Ok(())
}

/// RefundCompleted -> Finished: the 201 stored.
fn finish_refunded(
    conn: &mut PgConnection,
    lease: &RefundLease,
) -> Result<StoredResponse, ServiceError> {
    let refund = model::find_by_key(conn, lease.key_id())?;
    Ok(wire::refund::created(&refund.json()))
}

/// RefundCreated -> Finished for a refund the gateway refused for good (the
/// charge already refunded elsewhere, say): the refund `failed`, which frees
/// its reservation, and a 502 stored so that retries get the same answer.
fn finish_failed(
    conn: &mut PgConnection,
    refund: &Refund,
    failure: &GatewayError,
) -> Result<StoredResponse, ServiceError> {
    log::error!(
        "payment gateway rejected refund {} of ride {}: {failure}",
        refund.id.0,
        refund.ride_id
    );
    let problem = Problem::new(ProblemKind::PaymentGatewayRejected, failure.to_string())
        .with_extension("ride_id", refund.ride_id)
        .with_extension("refund_id", refund.id);
    model::settle(
        conn,
        refund.id,
        RefundStatus::Pending,
        RefundStatus::Failed,
        None,
    )?;
    Ok(StoredResponse::problem(&problem))
}
