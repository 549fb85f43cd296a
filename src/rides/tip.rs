//! `POST /api/rides/{id}/tip` on the idempotency flow. On an `authorized`
//! ride the tip is written at once (Started -> Finished): the completion
//! captures it with the final fare. On a `captured` ride the ride is taken
//! for the key (Started), then the tip paid by a PaymentIntent of its own,
//! off session on the card saved to the ride's customer, and recorded
//! (TipStarted); a tip the card declines ends with its PaymentIntent
//! cancelled and the ride as it was. One tip per ride succeeds.

use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::audit;
use crate::context::ServiceContext;
use crate::db::{recorded, CacheStatement};
use crate::idempotency::{
    CallOf, Called, Endpoint, FoundOf, Lease, StoredResponse, Transition, TransitionOf,
};
use crate::payments::{
    self, call_metadata, gateway_key, lookup, CancelIntent, CaptureMethod, CreateIntent, Final,
    GatewayError, HoldRequest, IntentStatus, PaymentGateway, PaymentIntent,
};
use crate::public_ids::{PathId, RidePublicId};
use crate::rides::charges::ChargeRecord;
use crate::rides::lock::{self, TakeRide};
use crate::rides::model::{Ride, RideStatus};
use crate::rides::settle;
use crate::rides::unpaid;
use crate::schema::rides;
use crate::service_error::{Refusal, ServiceError};
use crate::validation::{parse_body, FieldError};
use crate::wire;
use crate::wire::problem::{Problem, ProblemKind};
use crate::wire::ride_actions::TipBody;

crate::recovery_points! {
    /// How far a tip has got. A retry (or the completer) resumes here. A
    /// tip on a held ride is written at once, from Started to Finished.
    pub enum RecoveryPoint for "rides.tip" {
        /// The captured ride is the key's to tip; the tip's PaymentIntent,
        /// off session, may or may not have been made (and, declined,
        /// cancelled).
        TipStarted = "tip_started", call "tip-payment";
    }
}

/// The least and the most a tip may be (minor units).
pub const MIN_TIP_CENTS: i64 = 1;
pub const MAX_TIP_CENTS: i64 = 100_000;

/// A validated tip. Its JSON form is the canonical request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TipParams {
    // In sorted order, as the canonical form needs.
    pub amount_cents: i64,
    pub ride_id: PathId<RidePublicId>,
}

impl TipParams {
    pub fn parse(ride_id: PathId<RidePublicId>, body: &[u8]) -> Result<TipParams, Vec<FieldError>> {
        let body: TipBody = parse_body(body, expected).map_err(|err| vec![err])?;
        match body.amount_cents {
            None => Err(vec![FieldError::new("amount_cents", "is required")]),
            Some(amount) if !(MIN_TIP_CENTS..=MAX_TIP_CENTS).contains(&amount) => {
                Err(vec![FieldError::new(
                    "amount_cents",
                    format!("must be between {MIN_TIP_CENTS} and {MAX_TIP_CENTS} (minor units)"),
                )])
            }
            Some(amount_cents) => Ok(TipParams {
                amount_cents,
                ride_id,
            }),
        }
    }
}

fn expected(field: &str) -> Option<&'static str> {
    (field == "amount_cents").then_some("must be an integer number of minor units")
}

/// The endpoint. Its steps hand on the ride the key took.
pub struct TipEndpoint;

impl Endpoint for TipEndpoint {
    type Point = RecoveryPoint;
    type Params = TipParams;
    type Context = ServiceContext;
    type Known = Ride;
    type Answer = Final<PaymentIntent>;

    fn start(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &TipLease,
        params: &TipParams,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        begin(conn, lease, params)
    }

    fn load(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &TipLease,
        params: &TipParams,
        _point: RecoveryPoint,
    ) -> Result<Ride, ServiceError> {
        lock::taken(conn, params.ride_id, lease.key_id())
    }

    /// The tip's PaymentIntent, holding no pooled connection while the
    /// gateway works; one the card declined, cancelled.
    fn call(
        cx: &ServiceContext,
        lease: &TipLease,
        params: &TipParams,
        _point: RecoveryPoint,
        ride: Ride,
    ) -> Result<CallOf<Self>, ServiceError> {
        let gateway = cx.gateway.as_ref();
        let answer = pay_tip(gateway, cx.installation_id, lease, &ride, params);
        let answer = payments::create_answer(gateway, answer)?;
        cancel_declined(gateway, lease, &answer)?;
        Ok(Called::Answered(ride, answer))
    }

    /// Any generation's tip PaymentIntent, from the gateway's lists.
    fn look_up(
        cx: &ServiceContext,
        lease: &TipLease,
        _params: &TipParams,
        _point: RecoveryPoint,
        ride: Ride,
    ) -> Result<FoundOf<Self>, ServiceError> {
        let gateway = cx.gateway.as_ref();
        let call = call_metadata(cx.installation_id, lease.gateway_calls());
        let made =
            lookup::create_answer(gateway, &call, ride.created_at, ride.customer.as_deref())?;
        let made = made.map(|answer| match answer {
            // Declined, and cancelled since.
            Final::Made(intent) if intent.status == IntentStatus::Canceled => {
                Final::Refused(lookup::declined(intent))
            }
            answer => answer,
        });
        if let Some(answer) = &made {
            cancel_declined(gateway, lease, answer)?;
        }
        Ok(lookup::found(ride, made))
    }

    /// TipStarted -> Finished.
    fn record(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &TipLease,
        params: &TipParams,
        ride: Ride,
        answer: Final<PaymentIntent>,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        let answer = match unpaid::unless_released(conn, lease.gateway_calls(), answer)? {
            Final::Made(intent) if intent.status != IntentStatus::Succeeded => {
                Final::Refused(GatewayError::Rejected {
                    message: format!(
                        "the tip's PaymentIntent {} answered as {} off session",
                        intent.id, intent.status
                    ),
                })
            }
            answer => answer,
        };
        Ok(Transition::Finish(match answer {
            Final::Made(intent) => finish_tipped(conn, &ride, lease, params, &intent)?,
            Final::Refused(refusal) => finish_unpaid(conn, &ride, lease, &refusal)?,
        }))
    }
}

/// Name the effects in their derived gateway keys.
pub const TIP_KEY_PURPOSE: &str = "ride-tip";
pub const TIP_CANCEL_KEY_PURPOSE: &str = "ride-tip-cancel";

pub type TipLease = Lease<RecoveryPoint>;

/// Started: the ride taken for the key, `authorized` or `captured`, with no
/// tip yet. A held ride's tip is written at once, for its completion to
/// capture (-> Finished); a captured ride, paid with the saved card, goes
/// on to its own payment (-> TipStarted). Refused here, in the claim's
/// transaction: nothing written, the key not consumed.
fn begin(
    conn: &mut PgConnection,
    lease: &TipLease,
    params: &TipParams,
) -> Result<TransitionOf<TipEndpoint>, ServiceError> {
    let ride = lock::take(
        conn,
        lease.user_id(),
        params.ride_id,
        lease.key_id(),
        &TakeRide {
            verb: "tipped",
            audit_action: "ride.tip_started",
            allowed: &[RideStatus::Authorized, RideStatus::Captured],
            expired: Refusal::InvalidRideState,
        },
    )?;
    if ride.tip_cents > 0 {
        return Err(ServiceError::refused(
            Refusal::InvalidRideState,
            format!(
                "ride {} already has a tip of {}",
                ride.public_id, ride.tip_cents
            ),
        ));
    }
    if ride.status == RideStatus::Authorized {
        let tipped = write_tip(conn, &ride, lease, params.amount_cents, None)?;
        return Ok(Transition::Finish(wire::ride_actions::settled(
            &tipped.json(),
        )));
    }
    if ride.customer.is_none() {
        return Err(ServiceError::refused(
            Refusal::InvalidRideState,
            format!(
                "ride {} was not paid with a saved card: a tip after the fare is captured is \
                 charged off session, to the card saved to the rider's customer",
                ride.public_id
            ),
        ));
    }
    Ok(Transition::Advance(RecoveryPoint::TipStarted, ride))
}

/// The tip on the ride taken by the key, which the key then lets go: on a
/// held ride, for the completion to capture; with its own PaymentIntent,
/// counted as captured. One statement, with its audit record.
fn write_tip(
    conn: &mut PgConnection,
    ride: &Ride,
    lease: &TipLease,
    amount_cents: i64,
    intent: Option<&PaymentIntent>,
) -> Result<Ride, ServiceError> {
    let captured = intent.map_or(0, |intent| intent.amount_received_cents);
    recorded(
        diesel::update(
            rides::table
                .filter(rides::id.eq(ride.id))
                .filter(rides::settling_key_id.eq(lease.key_id())),
        )
        .set((
            rides::tip_cents.eq(amount_cents),
            rides::tip_payment_intent_id.eq(intent.map(|intent| intent.id.as_str())),
            rides::amount_captured_cents.eq(rides::amount_captured_cents + captured),
            rides::settling_key_id.eq(None::<crate::ids::KeyId>),
            rides::updated_at.eq(diesel::dsl::now),
        ))
        .returning(Ride::as_returning()),
    )
    .with(audit::of_changed(
        lease.user_id(),
        "ride.tipped",
        "ride",
        json!({
            "idempotency_key_id": lease.key_id(),
            "tip_cents": amount_cents,
            "payment_intent_id": intent.map(|intent| &intent.id),
        }),
    ))
    .with(intent.map(ChargeRecord::of).unwrap_or_default())
    .cached_as(write_tip)
    .get_result::<Ride>(conn)
    .optional()?
    // Only the key's own lease holder writes on a ride it took.
    .ok_or(ServiceError::LeaseLost)
}

/// The tip's PaymentIntent: off session (the rider is not there to
/// authenticate), charged at once, on the ride's card and customer, under
/// a key derived from the request. Holds no connection.
fn pay_tip(
    gateway: &dyn PaymentGateway,
    installation_id: uuid::Uuid,
    lease: &TipLease,
    ride: &Ride,
    params: &TipParams,
) -> Result<PaymentIntent, GatewayError> {
    let calls = lease.gateway_calls();
    gateway.create_intent(&CreateIntent {
        idempotency_key: gateway_key(calls, TIP_KEY_PURPOSE),
        amount_cents: params.amount_cents,
        currency: ride.currency.clone(),
        customer: ride.customer.clone(),
        payment_method: ride.payment_method.clone(),
        capture_method: CaptureMethod::Automatic,
        return_url: ride.return_url.clone().unwrap_or_default(),
        metadata: call_metadata(installation_id, calls),
        hold: HoldRequest::INCREMENTS_ONLY,
        off_session: true,
        transfer_group: calls.transfer_group(),
        expand_balance_transaction: calls.asks_for_balance_transaction(),
    })
}

/// A declined tip leaves its PaymentIntent waiting for another payment
/// method, which no one will give it: it is cancelled, under a key of its
/// own. A cancellation the gateway could not make now leaves the key where
/// it is, for a retry that asks again under the same keys; one it refuses
/// (already cancelled) or lost for ever is logged and passed by: such an
/// intent holds no money.
fn cancel_declined(
    gateway: &dyn PaymentGateway,
    lease: &TipLease,
    answer: &Final<PaymentIntent>,
) -> Result<(), ServiceError> {
    let Final::Refused(GatewayError::Declined {
        payment_intent: Some(intent_id),
        ..
    }) = answer
    else {
        return Ok(());
    };
    let cancelled = gateway.cancel_intent(&CancelIntent {
        idempotency_key: gateway_key(lease.gateway_calls(), TIP_CANCEL_KEY_PURPOSE),
        intent_id: intent_id.clone(),
        cancellation_reason: "abandoned".to_owned(),
    });
    match cancelled {
        Ok(_) => Ok(()),
        Err(
            other @ (GatewayError::Declined { .. }
            | GatewayError::Rejected { .. }
            | GatewayError::SavedFailure { .. }),
        ) => {
            log::warn!("the declined tip's PaymentIntent {intent_id} was not cancelled: {other}");
            Ok(())
        }
        Err(failure) => Err(payments::unavailable(failure)),
    }
}

/// TipStarted -> Finished: the tip's payment recorded on the ride (200).
fn finish_tipped(
    conn: &mut PgConnection,
    ride: &Ride,
    lease: &TipLease,
    params: &TipParams,
    intent: &PaymentIntent,
) -> Result<StoredResponse, ServiceError> {
    if (intent.amount_received_cents, intent.currency.as_str())
        != (params.amount_cents, ride.currency.as_str())
    {
        return Err(ServiceError::Internal(anyhow::anyhow!(
            "the tip's PaymentIntent {} took {} {}, the tip is {} {}",
            intent.id,
            intent.amount_received_cents,
            intent.currency,
            params.amount_cents,
            ride.currency
        )));
    }
    let tipped = write_tip(conn, ride, lease, params.amount_cents, Some(intent))?;
    Ok(wire::ride_actions::settled(&tipped.json()))
}

/// TipStarted -> Finished for a tip the gateway would not take: a decline
/// (402 `card-declined` with its code, `authentication_required` for a card
/// that needs the rider) or a rejection (502), stored; the ride as it was,
/// so another key may try again.
fn finish_unpaid(
    conn: &mut PgConnection,
    ride: &Ride,
    lease: &TipLease,
    refusal: &GatewayError,
) -> Result<StoredResponse, ServiceError> {
    let problem = match refusal {
        GatewayError::Declined {
            code,
            decline_code,
            message,
            ..
        } => Problem::new(ProblemKind::CardDeclined, message.clone())
            .with_extension("code", code.as_str())
            .with_extension("decline_code", decline_code.clone()),
        other => {
            log::error!(
                "payment gateway rejected the tip of ride {}: {other}",
                ride.public_id
            );
            Problem::new(ProblemKind::PaymentGatewayRejected, other.to_string())
        }
    };
    settle::finish_refused(conn, ride, lease.key_id(), problem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tip_is_required_and_in_range() {
        let parse = |body: &str| TipParams::parse(PathId::Legacy(7), body.as_bytes());
        assert_eq!(
            parse(r#"{"amount_cents": 300}"#).unwrap(),
            TipParams {
                amount_cents: 300,
                ride_id: PathId::Legacy(7)
            }
        );
        for body in [
            "{}",
            r#"{"amount_cents": 0}"#,
            r#"{"amount_cents": 100001}"#,
            r#"{"amount_cents": 2.5}"#,
            r#"{"amount_cents": 300, "tip": 1}"#,
        ] {
            assert!(parse(body).is_err(), "{body}");
        }
    }
}
