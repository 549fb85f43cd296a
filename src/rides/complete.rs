//! `POST /api/rides/{id}/complete` on the idempotency flow: the ride taken
//! for the key (Started), with the tip it has then, which the capture adds
//! to the final fare; the hold raised when the total is more than
//! it covers (CompletionStarted: Stripe's `increment_authorization`, whose
//! amount is the new total); the final fare captured (HoldCovers), what the
//! hold does not cover of it released. A retry, or the completer, resumes
//! from the recovery point the key reached.

use diesel::prelude::*;
use serde::{Deserialize, Serialize};

use crate::context::ServiceContext;
use crate::idempotency::{
    CallOf, Called, Endpoint, Finishing, FoundOf, Lease, StoredResponse, Transition, TransitionOf,
};
use crate::payments::{
    self, gateway_key, lookup, Final, GatewayError, IncrementIntent, IntentStatus, PaymentGateway,
    PaymentIntent,
};
use crate::public_ids::{PathId, RidePublicId};
use crate::rides::lock::{self, TakeRide};
use crate::rides::model::{Ride, RideStatus, MAX_AMOUNT_CENTS, MIN_AMOUNT_CENTS};
use crate::rides::settle::{self, HoldOutcome};
use crate::schema::rides;
use crate::service_error::{Refusal, ServiceError};
use crate::validation::{parse_body, FieldError};
use crate::wire;
use crate::wire::problem::{Problem, ProblemKind};
use crate::wire::ride_actions::CompleteBody;

crate::recovery_points! {
    /// How far a completion has got. A retry (or the completer) resumes here.
    pub enum RecoveryPoint for "rides.complete" {
        /// The ride is the key's to complete; the hold may or may not have
        /// been raised to the final fare. A hold that covered the fare
        /// needed no raising, and its key stays here through the capture.
        CompletionStarted = "completion_started", call "increment";
        /// The hold covers the final fare; the capture may or may not have
        /// been made.
        HoldCovers = "hold_covers", call "capture";
    }
}

/// A validated completion. Its JSON form is the canonical request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompleteParams {
    // In sorted order, as the canonical form needs.
    pub final_amount_cents: i64,
    pub ride_id: PathId<RidePublicId>,
}

impl CompleteParams {
    pub fn parse(
        ride_id: PathId<RidePublicId>,
        body: &[u8],
    ) -> Result<CompleteParams, Vec<FieldError>> {
        let body: CompleteBody = parse_body(body, expected).map_err(|err| vec![err])?;
        match body.final_amount_cents {
            None => Err(vec![FieldError::new("final_amount_cents", "is required")]),
            Some(amount) if !(MIN_AMOUNT_CENTS..=MAX_AMOUNT_CENTS).contains(&amount) => {
                Err(vec![FieldError::new(
                    "final_amount_cents",
                    format!(
                        "must be between {MIN_AMOUNT_CENTS} and {MAX_AMOUNT_CENTS} (minor units)"
                    ),
                )])
            }
            Some(final_amount_cents) => Ok(CompleteParams {
                final_amount_cents,
                ride_id,
            }),
        }
    }
}

fn expected(field: &str) -> Option<&'static str> {
    (field == "final_amount_cents").then_some("must be an integer number of minor units")
}

/// The endpoint. Its steps hand on the ride the key took, as each leaves
/// it.
pub struct CompleteEndpoint;

/// What the gateway answered, by call.
#[derive(Debug)]
pub enum CompletionCall {
    Raise(Final<PaymentIntent>),
    Capture(HoldOutcome),
}

impl Endpoint for CompleteEndpoint {
    type Point = RecoveryPoint;
    type Params = CompleteParams;
    type Context = ServiceContext;
    type Known = Ride;
    type Answer = CompletionCall;

    fn start(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &CompleteLease,
        params: &CompleteParams,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        Ok(Transition::Advance(
            RecoveryPoint::CompletionStarted,
            begin(conn, lease, params)?,
        ))
    }

    fn load(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &CompleteLease,
        params: &CompleteParams,
        _point: RecoveryPoint,
    ) -> Result<Ride, ServiceError> {
        lock::taken(conn, params.ride_id, lease.key_id())
    }

    /// The raise, or the capture; holds no pooled connection while the
    /// gateway works.
    fn call(
        cx: &ServiceContext,
        lease: &CompleteLease,
        params: &CompleteParams,
        point: RecoveryPoint,
        ride: Ride,
    ) -> Result<CallOf<Self>, ServiceError> {
        let gateway = cx.gateway.as_ref();
        let answered = match point {
            RecoveryPoint::CompletionStarted if covered(&ride, params) => {
                return Ok(Called::NotNeeded(RecoveryPoint::HoldCovers, ride));
            }
            RecoveryPoint::CompletionStarted => {
                CompletionCall::Raise(raise(gateway, lease, &ride, params)?)
            }
            _ => CompletionCall::Capture(settle::capture(
                gateway,
                CAPTURE_KEY_PURPOSE,
                lease.gateway_calls(),
                &ride,
                to_capture(&ride, params),
            )?),
        };
        Ok(Called::Answered(ride, answered))
    }

    /// The raise or the capture, judged from the PaymentIntent now.
    fn look_up(
        cx: &ServiceContext,
        _lease: &CompleteLease,
        params: &CompleteParams,
        point: RecoveryPoint,
        ride: Ride,
    ) -> Result<FoundOf<Self>, ServiceError> {
        let gateway = cx.gateway.as_ref();
        let total = to_capture(&ride, params);
        // From CompletionStarted, the call made is the capture when the
        // hold covers the fare: the key stays stored there
        // (`Called::NotNeeded`).
        Ok(match point {
            RecoveryPoint::CompletionStarted if !covered(&ride, params) => {
                settle::found_in_intent(gateway, ride, |now| now.amount_cents >= total)?.map(
                    |answer| match answer {
                        HoldOutcome::Made(raised) => CompletionCall::Raise(Final::Made(raised)),
                        HoldOutcome::Lapsed(_) | HoldOutcome::Refused(..) => {
                            CompletionCall::Raise(Final::Refused(lookup::never_made()))
                        }
                    },
                )
            }
            _ => {
                settle::found_in_intent(gateway, ride, |now| now.status == IntentStatus::Succeeded)?
                    .map(CompletionCall::Capture)
            }
        })
    }

    fn record(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &CompleteLease,
        _params: &CompleteParams,
        ride: Ride,
        answered: CompletionCall,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        match answered {
            CompletionCall::Raise(Final::Made(raised)) => Ok(Transition::Advance(
                RecoveryPoint::HoldCovers,
                record_raise(conn, &ride, &raised)?,
            )),
            CompletionCall::Raise(Final::Refused(refused)) => Ok(Transition::Finish(
                finish_raise_refused(conn, &ride, lease, &refused)?,
            )),
            CompletionCall::Capture(captured) => Ok(Transition::Finish(finish_captured(
                conn, &ride, lease, &captured,
            )?)),
        }
    }

    /// A capture the gateway made finishes with the ride's one change (a
    /// refusal in a transaction).
    fn finishing(
        _cx: &ServiceContext,
        lease: &CompleteLease,
        ride: &Ride,
        answered: &CompletionCall,
    ) -> Result<Option<Finishing>, ServiceError> {
        Ok(match answered {
            CompletionCall::Capture(captured) => {
                settle::finishing(ride, lease.key_id(), RideStatus::Captured, captured)
            }
            CompletionCall::Raise(_) => None,
        })
    }
}

/// Name the effects in their derived gateway keys.
pub const INCREMENT_KEY_PURPOSE: &str = "ride-increment";
pub const CAPTURE_KEY_PURPOSE: &str = "ride-capture";

pub type CompleteLease = Lease<RecoveryPoint>;

/// Started -> CompletionStarted: the ride, `authorized`, taken for the key.
/// One whose hold lapsed is refused as such, nothing written.
fn begin(
    conn: &mut PgConnection,
    lease: &CompleteLease,
    params: &CompleteParams,
) -> Result<Ride, ServiceError> {
    lock::take(
        conn,
        lease.user_id(),
        params.ride_id,
        lease.key_id(),
        &TakeRide {
            verb: "completed",
            audit_action: "ride.completion_started",
            allowed: &[RideStatus::Authorized],
            expired: Refusal::AuthorizationExpired,
        },
    )
}

/// The final fare and the ride's tip: what the completion captures. The
/// tip is the one the ride had when the completion took it, which nothing
/// changes while the key holds it (a tip waits, refused, until the key is
/// done), so every resume captures the same.
fn to_capture(ride: &Ride, params: &CompleteParams) -> i64 {
    params.final_amount_cents + ride.tip_cents
}

/// Whether the ride's hold covers what the completion captures as it is,
/// overcapture included: then it is captured at once, with no raise.
/// Decided from the ride as the completion took it, so a resume decides
/// the same.
fn covered(ride: &Ride, params: &CompleteParams) -> bool {
    to_capture(ride, params)
        <= ride
            .amount_capturable_max_cents
            .unwrap_or(ride.amount_authorized_cents)
}

/// The hold raised to the final fare, which it does not cover. Holds no
/// connection.
fn raise(
    gateway: &dyn PaymentGateway,
    lease: &CompleteLease,
    ride: &Ride,
    params: &CompleteParams,
) -> Result<Final<PaymentIntent>, ServiceError> {
    let answer = gateway.increment_intent(&IncrementIntent {
        idempotency_key: gateway_key(lease.gateway_calls(), INCREMENT_KEY_PURPOSE),
        intent_id: settle::intent_of(ride)?,
        amount_cents: to_capture(ride, params),
    });
    payments::final_answer(answer)
}

/// CompletionStarted -> HoldCovers: the raised hold recorded on the ride.
fn record_raise(
    conn: &mut PgConnection,
    ride: &Ride,
    raised: &PaymentIntent,
) -> Result<Ride, ServiceError> {
    Ok(diesel::update(rides::table.find(ride.id))
        .set((
            rides::amount_authorized_cents.eq(raised.amount_capturable_cents),
            // The overcapture room moves with the hold; an answer that does
            // not say (Stripe's, unexpanded) leaves the hold alone.
            rides::amount_capturable_max_cents.eq(raised
                .amount_capturable_max_cents
                .unwrap_or(raised.amount_capturable_cents)),
            rides::updated_at.eq(diesel::dsl::now),
        ))
        .returning(Ride::as_returning())
        .get_result(conn)?)
}

/// CompletionStarted -> Finished: the gateway would not raise the hold. A
/// 402 stored with the decline's code (`incremental_authorization_unavailable`
/// when the card or account offers no increments); the ride stays
/// `authorized`, so a completion under another key may capture what the
/// hold covers.
fn finish_raise_refused(
    conn: &mut PgConnection,
    ride: &Ride,
    lease: &CompleteLease,
    failure: &GatewayError,
) -> Result<StoredResponse, ServiceError> {
    let problem = match failure {
        GatewayError::Declined {
            code,
            decline_code,
            message,
            ..
        } => Problem::new(ProblemKind::CardDeclined, message.clone())
            .with_extension("code", code.as_str())
            .with_extension("decline_code", decline_code.clone()),
        other => Problem::new(
            ProblemKind::CardDeclined,
            format!("the hold cannot be raised to the final fare: {other}"),
        )
        .with_extension("code", "incremental_authorization_unavailable")
        .with_extension("decline_code", None::<String>),
    };
    settle::finish_refused(conn, ride, lease.key_id(), problem)
}

/// HoldCovers -> Finished: the capture recorded (200, ride `captured`); a
/// hold that lapsed makes the ride `expired` (422 `authorization-expired`);
/// any other refusal leaves it `authorized` (502).
fn finish_captured(
    conn: &mut PgConnection,
    ride: &Ride,
    lease: &CompleteLease,
    capture: &HoldOutcome,
) -> Result<StoredResponse, ServiceError> {
    match capture {
        HoldOutcome::Made(intent) => {
            settle::finish_settled(conn, ride, lease.key_id(), RideStatus::Captured, intent)
        }
        HoldOutcome::Lapsed(intent) => {
            settle::expire(conn, ride, intent)?;
            let problem = Problem::new(
                ProblemKind::AuthorizationExpired,
                "the card's authorization lapsed before the ride was completed; nothing was charged",
            )
            .with_extension("ride_id", ride.public_id);
            Ok(wire::problem::stored(&problem))
        }
        HoldOutcome::Refused(refusal, _) => {
            settle::finish_refused(conn, ride, lease.key_id(), settle::refused_problem(refusal))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_final_fare_is_required_and_in_range() {
        let parse = |body: &str| CompleteParams::parse(PathId::Legacy(7), body.as_bytes());
        assert_eq!(
            parse(r#"{"final_amount_cents": 1800}"#).unwrap(),
            CompleteParams {
                final_amount_cents: 1800,
                ride_id: PathId::Legacy(7)
            }
        );
        for body in [
            "{}",
            r#"{"final_amount_cents": 49}"#,
            r#"{"final_amount_cents": 1.5}"#,
            r#"{"tip": 1}"#,
        ] {
            assert!(parse(body).is_err(), "{body}");
        }
    }
}
