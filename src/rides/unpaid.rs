//! A new ride whose payment the gateway refused: declined by the card
//! (402, the PaymentIntent it left behind recorded), its payment method
//! unknown to the gateway (400, as an invalid field) or rejected (502). The
//! ride keeps the refusal and the answer is stored, so retries get it too.
//! A create answered again for a payment reconciliation has released since
//! (a ride's or a tip's) counts as rejected.

use diesel::PgConnection;

use crate::idempotency::{GatewayCalls, StoredResponse};
use crate::payments::{released, Final, GatewayError, PaymentIntent};
use crate::rides::charges::ChargeRecord;
use crate::rides::model::{self, Ride, RideStatus};
use crate::service_error::ServiceError;
use crate::validation::FieldError;
use crate::wire;
use crate::wire::problem::{Problem, ProblemKind};

/// RideCreated -> Finished, the ride settled as refused.
pub fn finish(
    conn: &mut PgConnection,
    ride: &Ride,
    failure: &GatewayError,
) -> Result<StoredResponse, ServiceError> {
    let (status, problem, intent) = match failure {
        GatewayError::Declined {
            code,
            decline_code,
            message,
            payment_intent,
        } => (
            RideStatus::PaymentDeclined,
            Problem::new(ProblemKind::CardDeclined, message.clone())
                .with_extension("ride_id", ride.public_id)
                .with_extension("code", code.as_str())
                .with_extension("decline_code", decline_code.clone()),
            payment_intent.clone(),
        ),
        // The caller's mistake, told as an invalid field is: the same
        // payment method can never pay, and the gateway is not at fault.
        unknown if unknown.is_unknown_payment_method() => (
            RideStatus::PaymentFailed,
            Problem::invalid(vec![FieldError::new(
                "payment_method",
                format!(
                    "is not a payment method the gateway has: {}",
                    ride.payment_method
                ),
            )])
            .with_extension("ride_id", ride.public_id),
            None,
        ),
        other => {
            log::error!(
                "payment gateway rejected the payment of ride {}: {other}",
                ride.public_id
            );
            (
                RideStatus::PaymentFailed,
                Problem::new(ProblemKind::PaymentGatewayRejected, other.to_string())
                    .with_extension("ride_id", ride.public_id),
                None,
            )
        }
    };
    let unpaid = model::Settlement {
        status,
        payment_intent_id: intent,
        client_secret: None,
        next_action: None,
        amount_authorized_cents: 0,
        amount_captured_cents: 0,
        settling_key_id: None,
        amount_capturable_max_cents: None,
        hold_expires_at: None,
        tip_cents: 0,
        charge: ChargeRecord::default(),
    };
    model::settle(conn, ride.id, &[RideStatus::Pending], &unpaid)?
        .ok_or(ServiceError::LeaseLost)?;
    Ok(wire::problem::stored(&problem))
}

/// A create's answer as a step records it: one given again may be of a
/// payment reconciliation released since, which is then a rejection.
pub fn unless_released(
    conn: &mut PgConnection,
    calls: GatewayCalls,
    answer: Final<PaymentIntent>,
) -> Result<Final<PaymentIntent>, ServiceError> {
    match answer {
        Final::Made(intent) if intent.replayed && released::of_calls(conn, calls)? => {
            Ok(Final::Refused(GatewayError::Rejected {
                message: format!(
                    "PaymentIntent {} was released by reconciliation: no ride recorded it",
                    intent.id
                ),
            }))
        }
        answer => Ok(answer),
    }
}
