//! A new ride whose payment the gateway refused: declined by the card
//! (402, the PaymentIntent it left behind recorded) or rejected (502). The
//! ride keeps the refusal and the answer is stored, so retries get it too.

use diesel::PgConnection;

use crate::idempotency::StoredResponse;
use crate::payments::GatewayError;
use crate::rides::model::{self, Ride, RideStatus};
use crate::service_error::ServiceError;
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
        charge: None,
    };
    model::settle(conn, ride.id, &[RideStatus::Pending], &unpaid)?
        .ok_or(ServiceError::LeaseLost)?;
    Ok(wire::problem::stored(&problem))
}
