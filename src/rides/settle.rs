//! How a key that took a ride ends its hold: the capture or cancellation,
//! its answer sorted so that a lapsed hold is told from other refusals, and
//! the ride settled (or given back) with the answer the key stores.

use diesel::prelude::*;
use serde_json::json;

use super::charges::ChargeRecord;
use super::lock::release;
use super::model::{Ride, RideStatus, Settlement};
use crate::audit;
use crate::db::{recorded, CacheStatement};
use crate::idempotency::{fenced, Finishing, Found, GatewayCalls, StoredResponse};
use crate::ids::{KeyId, RideId};
use crate::payments::{
    self, gateway_key, CaptureIntent, Final, GatewayError, IntentStatus, PaymentGateway,
    PaymentIntent,
};
use crate::schema::rides;
use crate::service_error::ServiceError;
use crate::wire;
use crate::wire::problem::{Problem, ProblemKind};

/// What a capture or a cancellation came to.
#[derive(Debug, Clone)]
pub enum HoldOutcome {
    Made(PaymentIntent),
    /// The gateway refused it, and the PaymentIntent says the hold lapsed
    /// (canceled, `cancellation_reason` automatic).
    Lapsed(PaymentIntent),
    /// Refused permanently otherwise; the PaymentIntent as it is, if known.
    Refused(GatewayError, Option<PaymentIntent>),
}

/// Sorts a call's answer: a refusal is looked into, the gateway asked for
/// the PaymentIntent, so that a hold that lapsed is told from other
/// refusals, and a PaymentIntent already in `done`, the status the call
/// leaves it in (an earlier generation of the call made it, say: the
/// gateway answers `payment_intent_unexpected_state`), is recorded as made.
/// Holds no connection.
pub fn hold_outcome(
    gateway: &dyn PaymentGateway,
    intent_id: &str,
    done: IntentStatus,
    answer: Result<PaymentIntent, GatewayError>,
) -> Result<HoldOutcome, ServiceError> {
    match payments::final_answer(answer)? {
        Final::Made(intent) => Ok(HoldOutcome::Made(intent)),
        Final::Refused(refusal) => {
            let now = gateway
                .retrieve_intent(intent_id)
                .map_err(crate::payments::unavailable)?;
            Ok(match now {
                Some(intent) if lapsed(&intent) => HoldOutcome::Lapsed(intent),
                Some(intent) if intent.status == done => HoldOutcome::Made(intent),
                now => HoldOutcome::Refused(refusal, now),
            })
        }
    }
}

/// A hold the gateway released on its own when it lapsed.
fn lapsed(intent: &PaymentIntent) -> bool {
    intent.status == IntentStatus::Canceled
        && intent.cancellation_reason.as_deref() == Some("automatic")
}

/// What a capture, cancellation or raise of the ride's PaymentIntent did,
/// judged from the intent as the gateway holds it now (reconciliation's
/// lookup): made when `done` finds its effect there; a hold that lapsed as
/// such; else proven not made.
pub fn found_in_intent(
    gateway: &dyn PaymentGateway,
    ride: Ride,
    done: impl Fn(&PaymentIntent) -> bool,
) -> Result<Found<Ride, HoldOutcome>, ServiceError> {
    let intent_id = intent_of(&ride)?;
    let now = gateway
        .retrieve_intent(&intent_id)
        .map_err(payments::unavailable)?
        .ok_or_else(|| anyhow::anyhow!("the gateway has no PaymentIntent {intent_id}"))?;
    Ok(if done(&now) {
        Found::Made(ride, HoldOutcome::Made(now))
    } else if lapsed(&now) {
        Found::Made(ride, HoldOutcome::Lapsed(now))
    } else {
        Found::Absent {
            known: ride,
            refused: HoldOutcome::Refused(payments::lookup::never_made(), Some(now)),
        }
    })
}

/// Captures `amount` of the ride's hold under a key derived for `purpose`.
pub fn capture(
    gateway: &dyn PaymentGateway,
    purpose: &str,
    calls: GatewayCalls,
    ride: &Ride,
    amount_cents: i64,
) -> Result<HoldOutcome, ServiceError> {
    let intent_id = intent_of(ride)?;
    let answer = gateway.capture_intent(&CaptureIntent {
        idempotency_key: gateway_key(calls, purpose),
        intent_id: intent_id.clone(),
        amount_to_capture_cents: amount_cents,
        expand_balance_transaction: calls.asks_for_balance_transaction(),
    });
    hold_outcome(gateway, &intent_id, IntentStatus::Succeeded, answer)
}

/// The ride's PaymentIntent; a ride that can be completed or cancelled has one.
pub fn intent_of(ride: &Ride) -> Result<String, ServiceError> {
    ride.payment_intent_id.clone().ok_or_else(|| {
        ServiceError::Internal(anyhow::anyhow!(
            "ride {} is {} without a PaymentIntent",
            ride.public_id,
            ride.status
        ))
    })
}

/// The UPDATE of the ride `ride` taken by `key`.
macro_rules! settled_by_key {
    ($ride:expr, $key:expr) => {
        diesel::update(
            rides::table
                .filter(rides::id.eq($ride.id))
                .filter(rides::settling_key_id.eq($key)),
        )
    };
}

/// What a capture or a cancellation the gateway made does to the ride it
/// ends: `status`, with what the intent holds and took, no longer taken;
/// and the audit record of that.
fn settled(
    ride: &Ride,
    status: RideStatus,
    intent: &PaymentIntent,
) -> (Settlement, audit::OfChanged) {
    let settlement = Settlement {
        status,
        payment_intent_id: Some(intent.id.clone()),
        client_secret: ride.client_secret.clone(),
        next_action: None,
        amount_authorized_cents: ride.amount_authorized_cents,
        amount_captured_cents: intent.amount_received_cents,
        settling_key_id: None,
        amount_capturable_max_cents: None,
        hold_expires_at: None,
        // The completion captured the tip with the fare; a cancellation
        // drops it.
        tip_cents: match status {
            RideStatus::Captured => ride.tip_cents,
            _ => 0,
        },
        charge: ChargeRecord::of(intent),
    };
    let audit = audit::of_changed(
        ride.user_id,
        format!("ride.{status}"),
        "ride",
        json!({ "payment_intent_id": intent.id, "amount_captured_cents": intent.amount_received_cents }),
    );
    (settlement, audit)
}

/// Records `status` with what the intent holds and took, ends `key`'s hold
/// on the ride, and answers the ride (200). One statement, with its audit
/// record, in the caller's transaction.
pub fn finish_settled(
    conn: &mut PgConnection,
    ride: &Ride,
    key: KeyId,
    status: RideStatus,
    intent: &PaymentIntent,
) -> Result<StoredResponse, ServiceError> {
    let (settlement, audit) = settled(ride, status, intent);
    let settled: Ride = recorded(
        settled_by_key!(ride, key)
            .set((&settlement, rides::updated_at.eq(diesel::dsl::now)))
            .returning(Ride::as_returning()),
    )
    .with(audit)
    .with(settlement.charge.clone())
    .cached_as(finish_settled)
    .get_result(conn)
    .optional()?
    // Only the key's own lease holder settles a ride it took.
    .ok_or(ServiceError::LeaseLost)?;
    Ok(wire::ride_actions::settled(&settled.json()))
}

/// The key's last step as one statement (`Finishing`) when the gateway
/// made what the key asked: the ride settled as `status`.
pub fn finishing(
    ride: &Ride,
    key: KeyId,
    status: RideStatus,
    answer: &HoldOutcome,
) -> Option<Finishing> {
    match answer {
        HoldOutcome::Made(intent) => Some(settled_finishing(ride, key, status, intent)),
        HoldOutcome::Lapsed(_) | HoldOutcome::Refused(..) => None,
    }
}

/// `finish_settled` as the key's last step, sent with its final write
/// (`Finishing`): the answer is the ride as the settlement leaves it.
fn settled_finishing(
    ride: &Ride,
    key: KeyId,
    status: RideStatus,
    intent: &PaymentIntent,
) -> Finishing {
    let (settlement, audit) = settled(ride, status, intent);
    let response = wire::ride_actions::settled(&ride.settled(&settlement).json());
    let charge = settlement.charge.clone();
    let change = recorded(
        settled_by_key!(ride, key)
            .filter(fenced())
            .set((settlement, rides::updated_at.eq(diesel::dsl::now)))
            .returning(Ride::as_returning()),
    )
    .with(audit)
    .with(charge);
    Finishing::new(change, response)
}

/// The hold lapsed at the gateway: the ride is `expired`, the key's hold on
/// it ended.
pub fn expire(
    conn: &mut PgConnection,
    ride: &Ride,
    intent: &PaymentIntent,
) -> Result<(), ServiceError> {
    recorded(
        diesel::update(rides::table.find(ride.id))
            .set((
                &Settlement {
                    status: RideStatus::Expired,
                    payment_intent_id: Some(intent.id.clone()),
                    client_secret: ride.client_secret.clone(),
                    next_action: None,
                    amount_authorized_cents: ride.amount_authorized_cents,
                    amount_captured_cents: 0,
                    settling_key_id: None,
                    amount_capturable_max_cents: None,
                    hold_expires_at: None,
                    tip_cents: 0,
                    charge: ChargeRecord::default(),
                },
                rides::updated_at.eq(diesel::dsl::now),
            ))
            .returning(rides::id),
    )
    .with(audit::of_changed(
        ride.user_id,
        "ride.expired",
        "ride",
        json!({ "payment_intent_id": intent.id }),
    ))
    .cached_as(expire)
    .get_result::<RideId>(conn)?;
    log::info!("the hold of ride {} lapsed at the gateway", ride.id);
    Ok(())
}

/// Ends the key's hold on the ride and stores `problem` (with the ride's id)
/// as the key's answer.
pub fn finish_refused(
    conn: &mut PgConnection,
    ride: &Ride,
    key: KeyId,
    problem: Problem,
) -> Result<StoredResponse, ServiceError> {
    release(conn, ride.id, key)?;
    Ok(wire::problem::stored(
        &problem.with_extension("ride_id", ride.public_id),
    ))
}

/// The stored answer to a refusal the gateway gave permanently (a hold that
/// lapsed is answered by the caller).
pub fn refused_problem(refusal: &GatewayError) -> Problem {
    log::warn!("payment gateway refused a ride's capture or cancellation: {refusal}");
    Problem::new(ProblemKind::PaymentGatewayRejected, refusal.to_string())
}
