//! `POST /api/rides/{id}/refunds` on the idempotency flow: the refund,
//! pending, its amount reserved (Started), split in two parts when it is
//! more than what remains of the fare's PaymentIntent and the ride's tip
//! has one of its own; the gateway refund of the first part, made between
//! transactions (RefundCreated); that of the second, the tip's
//! (FarePartRefunded); what the gateway answered, recorded
//! (RefundCompleted); the answer stored. A retry, or the completer, resumes
//! from the recovery point the key reached.
//!
//! Locks: the claim locks the key before `create_refund` locks the ride. A
//! later transaction locks the ride, then writes its key, whose lease it
//! holds; the only other transaction that may lock that key is a claim taking
//! an expired lease over, and a claim of a key past `started` takes no ride
//! lock. So no two requests wait on each other in a cycle.

use diesel::PgConnection;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::model::{self, NewRefund, Refund, RefundStatus};
use crate::audit;
use crate::context::ServiceContext;
use crate::idempotency::{
    CallOf, Called, CanonicalRequest, Endpoint, FoundOf, Lease, StoredResponse, Transition,
    TransitionOf,
};
use crate::ids::{RefundId, UserId};
use crate::payments::{
    self, call_metadata, gateway_key, lookup, Final, GatewayError, PaymentGateway, RefundRequest,
};
use crate::public_ids::{PathId, RidePublicId};
use crate::rides;
use crate::rides::model::{Ride, RideStatus, MAX_AMOUNT_CENTS};
use crate::service_error::{Refusal, ServiceError};
use crate::validation::{parse_body, FieldError};
use crate::wire;
use crate::wire::problem::{Problem, ProblemKind};
use crate::wire::refund::RefundBody;

crate::recovery_points! {
    /// How far a refund request has got. A retry (or the completer) resumes
    /// here.
    pub enum RecoveryPoint for "refunds.create" {
        /// The refund exists, pending, its amount reserved on the ride; the
        /// gateway refund may or may not have been made.
        RefundCreated = "refund_created", call "refund";
        /// The first part of a refund split between the fare and the tip
        /// is recorded; the second, of the tip's PaymentIntent, may or may
        /// not have been made.
        FarePartRefunded = "fare_part_refunded", call "refund-tip-part";
        /// The gateway refund is recorded; the response is not stored yet.
        RefundCompleted = "refund_completed", atomic;
    }
}

/// Stripe's refund reasons.
pub const REASONS: [&str; 3] = ["requested_by_customer", "duplicate", "fraudulent"];

/// A validated refund request. Its JSON form is the canonical request:
/// fingerprinted (with the path, which names the ride too), and stored so a
/// worker can finish it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefundParams {
    // In sorted order, as the canonical form needs.
    /// `None`: whatever remains of the charge when the refund is created.
    pub amount_cents: Option<i64>,
    pub reason: Option<String>,
    pub ride_id: PathId<RidePublicId>,
}

impl RefundParams {
    /// An empty body is a refund of everything that remains.
    pub fn parse(
        ride_id: PathId<RidePublicId>,
        body: &[u8],
    ) -> Result<RefundParams, Vec<FieldError>> {
        let body: RefundBody = if body.iter().all(u8::is_ascii_whitespace) {
            RefundBody {
                amount_cents: None,
                reason: None,
            }
        } else {
            parse_body(body, expected).map_err(|err| vec![err])?
        };
        let mut errors = Vec::new();
        if let Some(amount) = body.amount_cents {
            if !(1..=MAX_AMOUNT_CENTS).contains(&amount) {
                errors.push(FieldError::new(
                    "amount_cents",
                    format!("must be between 1 and {MAX_AMOUNT_CENTS} (minor units)"),
                ));
            }
        }
        if let Some(reason) = &body.reason {
            if !REASONS.contains(&reason.as_str()) {
                errors.push(FieldError::new(
                    "reason",
                    format!("must be one of {}", REASONS.join(", ")),
                ));
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(RefundParams {
            ride_id,
            amount_cents: body.amount_cents,
            reason: body.reason,
        })
    }

    /// The canonical JSON form.
    pub fn canonical(&self) -> CanonicalRequest {
        CanonicalRequest::of(self)
    }
}

fn expected(field: &str) -> Option<&'static str> {
    match field {
        "amount_cents" => Some("must be an integer number of minor units"),
        "reason" => Some("must be a string"),
        _ => None,
    }
}

/// The endpoint (`flow::serve::<RefundEndpoint>` serves a request,
/// `KeyRows<RefundEndpoint>` its keys for the completer). Its steps hand
/// on the part of the refund the next call makes.
pub struct RefundEndpoint;

/// The part of the refund a call makes, and its ride, whose payments it
/// refunds.
pub struct Part {
    ride: Ride,
    refund: Refund,
}

impl Endpoint for RefundEndpoint {
    type Point = RecoveryPoint;
    type Params = RefundParams;
    type Context = ServiceContext;
    type Known = Part;
    type Answer = Final<payments::Refund>;

    /// Started -> RefundCreated. A refund not allowed is refused here, which
    /// rolls the claim back too: nothing is written, the key not consumed.
    fn start(
        cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &RefundLease,
        params: &RefundParams,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        Ok(Transition::Advance(
            RecoveryPoint::RefundCreated,
            create_refund(conn, lease, params, cx)?,
        ))
    }

    /// The part the call from `point` makes: the second from
    /// FarePartRefunded, else the first.
    fn load(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &RefundLease,
        _params: &RefundParams,
        point: RecoveryPoint,
    ) -> Result<Part, ServiceError> {
        let first = model::find_by_key(conn, lease.key_id())?;
        let refund = match point {
            RecoveryPoint::FarePartRefunded => model::second_part(conn, first.id)?
                .ok_or_else(|| anyhow::anyhow!("refund {} has no second part", first.id.0))?,
            _ => first,
        };
        let ride = rides::reads::find_ride(conn, refund.ride_id)?;
        Ok(Part { ride, refund })
    }

    /// RefundCompleted -> Finished.
    fn atomic(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &RefundLease,
        _params: &RefundParams,
        _point: RecoveryPoint,
        part: Part,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        Ok(Transition::Finish(finish_refunded(
            conn, lease, &part.ride,
        )?))
    }

    /// The part's gateway refund, holding no pooled connection while the
    /// gateway works.
    fn call(
        cx: &ServiceContext,
        lease: &RefundLease,
        _params: &RefundParams,
        _point: RecoveryPoint,
        part: Part,
    ) -> Result<CallOf<Self>, ServiceError> {
        let answer = refund_at_gateway(
            cx.gateway.as_ref(),
            cx.installation_id,
            lease,
            &part.ride,
            &part.refund,
        );
        Ok(Called::Answered(part, payments::final_answer(answer)?))
    }

    /// Any generation's refund, from the part's payment's refunds.
    fn look_up(
        cx: &ServiceContext,
        lease: &RefundLease,
        _params: &RefundParams,
        _point: RecoveryPoint,
        part: Part,
    ) -> Result<FoundOf<Self>, ServiceError> {
        let Some(payment) = part.refund.payment(&part.ride) else {
            return Err(
                anyhow::anyhow!("ride {} has no payment to refund", part.ride.public_id).into(),
            );
        };
        let call = call_metadata(cx.installation_id, lease.gateway_calls());
        let made = lookup::refund_made(cx.gateway.as_ref(), &payment, &call)?;
        Ok(lookup::found(part, made.map(Final::Made)))
    }

    /// RefundCreated -> FarePartRefunded (a second part to make) or
    /// RefundCompleted; FarePartRefunded -> RefundCompleted; or Finished
    /// for a part the gateway refused permanently.
    fn record(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &RefundLease,
        _params: &RefundParams,
        part: Part,
        answer: Final<payments::Refund>,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        let second = match part.refund.part_of {
            Some(_) => None,
            None => model::second_part(conn, part.refund.id)?,
        };
        match answer {
            Final::Made(made) => {
                record_refund(conn, &part.refund, &made)?;
                Ok(match second {
                    Some(second) => Transition::Advance(
                        RecoveryPoint::FarePartRefunded,
                        Part {
                            ride: part.ride,
                            refund: second,
                        },
                    ),
                    None => Transition::Advance(RecoveryPoint::RefundCompleted, part),
                })
            }
            Final::Refused(failure) => Ok(Transition::Finish(finish_failed(
                conn,
                lease,
                &part.ride,
                [Some(part.refund), second].into_iter().flatten(),
                &failure,
            )?)),
        }
    }

    /// Another user's ride is not found, before the key is even looked at,
    /// so nothing about it (not even a key's state) is revealed.
    fn admit(
        conn: &mut PgConnection,
        user: UserId,
        params: &RefundParams,
    ) -> Result<(), ServiceError> {
        rides::reads::find_for_user(conn, user, params.ride_id)?
            .map(drop)
            .ok_or(ServiceError::NotFound)
    }
}

/// Name this endpoint's effects in their derived gateway keys: the first
/// part, and the second (the tip's) of a refund split in two.
pub const REFUND_KEY_PURPOSE: &str = "ride-refund";
pub const SECOND_PART_KEY_PURPOSE: &str = "ride-refund-tip-part";

pub type RefundLease = Lease<RecoveryPoint>;

/// Started -> RefundCreated: under the ride's row lock, the refund (pending,
/// under the id derived from the request) with its amount reserved, and its
/// audit record. A refund that is not
/// allowed fails here, which rolls back the claim in the same transaction:
/// nothing is written and the key is not consumed.
fn create_refund(
    conn: &mut PgConnection,
    lease: &RefundLease,
    params: &RefundParams,
    cx: &ServiceContext,
) -> Result<Part, ServiceError> {
    let ride = model::lock_named_ride(conn, lease.user_id(), params.ride_id)?
        .ok_or(ServiceError::NotFound)?;
    // A captured ride, or a cancelled one whose fee was captured.
    let paid = ride.status == RideStatus::Captured
        || (ride.status == RideStatus::Canceled && ride.amount_captured_cents > 0);
    if !paid {
        return Err(ServiceError::refused(
            Refusal::RefundNotAllowed,
            format!(
                "ride {} is {}; only what was captured can be refunded",
                ride.public_id, ride.status
            ),
        ));
    }
    let remaining = model::remaining_cents(conn, &ride)?;
    let amount = params.amount_cents.unwrap_or(remaining.total());
    if remaining.total() <= 0 || amount > remaining.total() {
        return Err(ServiceError::refused(
            Refusal::RefundNotAllowed,
            format!(
                "{amount} is more than the {} that remains to refund of ride {} \
             (refunds in progress count against it)",
                remaining.total(),
                ride.public_id
            ),
        ));
    }
    // The fare's PaymentIntent first, then the tip's own.
    let refund = {
        let fare_part = amount.min(remaining.fare_cents);
        let parts = [
            (fare_part, ride.payment_intent_id.as_deref()),
            (amount - fare_part, ride.tip_payment_intent_id.as_deref()),
        ];
        let mut made = parts.into_iter().filter(|(part, _)| *part > 0);
        // One refund, one id: a second part carries the first's.
        let new_part =
            |public_id, (amount_cents, payment_intent_id), part_of: Option<RefundId>| NewRefund {
                public_id,
                ride_id: ride.id,
                user_id: lease.user_id(),
                idempotency_key_id: part_of.is_none().then(|| lease.key_id()),
                amount_cents,
                currency: &ride.currency,
                reason: params.reason.as_deref(),
                status: RefundStatus::Pending,
                gateway_refund_id: None,
                part_of,
                payment_intent_id,
            };
        let first = made.next().expect("a refund of more than 0 has a part");
        let refund = lease.insert_under_derived_id(&cx.id_secret, |public_id| {
            model::insert(conn, &new_part(public_id, first, None))
        })?;
        if let Some(second) = made.next() {
            model::insert(conn, &new_part(refund.public_id, second, Some(refund.id)))?;
        }
        refund
    };
    audit::record(
        conn,
        lease.user_id(),
        "refund.created",
        "refund",
        refund.id.0,
        json!({ "idempotency_key_id": lease.key_id(), "ride_id": ride.id, "amount_cents": amount }),
    )?;
    Ok(Part { ride, refund })
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
    let payment = refund.payment(ride).ok_or_else(|| GatewayError::Rejected {
        message: format!("ride {} has no payment to refund", ride.public_id),
    })?;
    let purpose = match refund.part_of {
        None => REFUND_KEY_PURPOSE,
        Some(_) => SECOND_PART_KEY_PURPOSE,
    };
    gateway.refund(&RefundRequest {
        idempotency_key: gateway_key(lease.gateway_calls(), purpose),
        payment,
        amount_cents: refund.amount_cents,
        reason: refund.reason.clone(),
        metadata: call_metadata(installation_id, lease.gateway_calls()),
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
    ride: &Ride,
) -> Result<StoredResponse, ServiceError> {
    let first = model::find_by_key(conn, lease.key_id())?;
    let refund = model::with_parts(conn, ride, first)?;
    Ok(wire::refund::created(&refund.json()))
}

/// RefundCreated or FarePartRefunded -> Finished for a part the gateway
/// refused permanently (the charge already refunded elsewhere, say): that part,
/// and a second not made after it, `failed`, which frees their
/// reservations, and a 502 stored so that retries get the same answer. A
/// first part that succeeded stays counted; the problem says so.
fn finish_failed(
    conn: &mut PgConnection,
    lease: &RefundLease,
    ride: &Ride,
    refused: impl Iterator<Item = Refund>,
    failure: &GatewayError,
) -> Result<StoredResponse, ServiceError> {
    let first = model::find_by_key(conn, lease.key_id())?;
    log::error!(
        "payment gateway rejected (part of) refund {} of ride {}: {failure}",
        first.id.0,
        first.ride_id
    );
    for part in refused {
        model::settle(
            conn,
            part.id,
            RefundStatus::Pending,
            RefundStatus::Failed,
            None,
        )?;
    }
    let refund = model::with_parts(conn, ride, first)?;
    let mut problem = Problem::new(ProblemKind::PaymentGatewayRejected, failure.to_string())
        .with_extension("ride_id", refund.ride_id)
        .with_extension("refund_id", refund.first.public_id);
    if refund.second.is_some() && refund.first.status != RefundStatus::Failed {
        let counted = serde_json::to_value(refund.json())
            .map_err(|err| anyhow::anyhow!("refund {} as JSON: {err}", refund.first.id.0))?;
        problem = problem.with_extension("refund", counted);
    }
    Ok(wire::problem::stored(&problem))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(body: &str) -> Vec<String> {
        RefundParams::parse(PathId::Legacy(7), body.as_bytes())
            .unwrap_err()
            .into_iter()
            .map(|e| e.field)
            .collect()
    }

    #[test]
    fn an_empty_object_or_body_refunds_everything() {
        for body in ["{}", "", " "] {
            let params = RefundParams::parse(PathId::Legacy(7), body.as_bytes()).unwrap();
            assert_eq!(
                (params.ride_id, params.amount_cents, params.reason),
                (PathId::Legacy(7), None, None)
            );
        }
    }

    #[test]
    fn the_canonical_form_ignores_field_order_and_round_trips() {
        let a = RefundParams::parse(
            PathId::Legacy(7),
            br#"{"amount_cents": 500, "reason": "duplicate"}"#,
        )
        .unwrap();
        let b = RefundParams::parse(
            PathId::Legacy(7),
            br#"{"reason": "duplicate", "amount_cents": 500}"#,
        )
        .unwrap();
        assert_eq!(a.canonical(), b.canonical());
        let stored: RefundParams = serde_json::from_slice(a.canonical().as_bytes()).unwrap();
        assert_eq!(stored, a);
    }

    #[test]
    fn bad_unknown_duplicate_and_mistyped_fields_are_named() {
        assert_eq!(
            fields(r#"{"amount_cents": 0, "reason": "bored"}"#),
            ["amount_cents", "reason"]
        );
        assert_eq!(fields(r#"{"tip": 5}"#), ["tip"]);
        assert_eq!(
            fields(r#"{"amount_cents": 1, "amount_cents": 1}"#),
            ["amount_cents"]
        );
        assert_eq!(fields(r#"{"amount_cents": 2.5}"#), ["amount_cents"]);
        assert_eq!(fields(r#"{"reason": 3}"#), ["reason"]);
        assert_eq!(fields("[]"), ["body"]);
        assert_eq!(fields("{"), ["body"]);
    }
}
