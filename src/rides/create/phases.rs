//! The phases of `POST /api/rides`: the database work of each atomic phase,
//! in the caller's transaction, and the PaymentIntent, made between
//! transactions. The flow writes the key row (`service::RidePhases` says
//! which phase runs from which recovery point).

use diesel::PgConnection;
use serde_json::json;

use super::recovery_point::RecoveryPoint;
use super::request::RideParams;
use crate::idempotency::{Finishing, Lease, StoredResponse};
use crate::payments::{derived_key, CreateIntent, GatewayError, PaymentGateway, PaymentIntent};
use crate::problem::{Problem, ProblemKind};
use crate::rides::model::{self, NewRide, Ride, RideStatus, Settlement};
use crate::rides::payment::{may_follow, settlement};
use crate::rides::receipt;
use crate::service_error::ServiceError;
use crate::validation::FieldError;
use crate::{audit, users};

/// Names this endpoint's effect in its derived gateway keys. Not the
/// Charges API's `ride-charge`: Stripe refuses a key reused on another
/// endpoint.
pub const PAYMENT_KEY_PURPOSE: &str = "ride-payment-intent";

pub type RideLease = Lease<RecoveryPoint>;

/// Started -> RideCreated: the ride, pending, with the card that pays (the
/// request's, or the user's saved one) and where the rider's browser comes
/// back to, fixed now so that every resend of the call is the same call;
/// and its audit record.
pub fn create_ride(
    conn: &mut PgConnection,
    lease: &RideLease,
    params: &RideParams,
    return_url: &str,
) -> Result<Ride, ServiceError> {
    let (payment_method, customer) = match &params.payment_method {
        Some(method) => (method.clone(), None),
        None => {
            let user = users::find(conn, lease.user_id())?;
            let method = user.stripe_payment_method_id.ok_or_else(|| {
                ServiceError::Invalid(vec![FieldError::new(
                    "payment_method",
                    "is required: the user has no saved card",
                )])
            })?;
            (method, user.stripe_customer_id)
        }
    };
    let ride = model::insert(
        conn,
        &NewRide {
            user_id: lease.user_id(),
            idempotency_key_id: lease.key_id(),
            origin_lat: params.origin_lat,
            origin_lon: params.origin_lon,
            target_lat: params.target_lat,
            target_lon: params.target_lon,
            amount_cents: params.amount_cents,
            currency: &params.currency,
            payment_method: &payment_method,
            capture_method: params.capture_method,
            customer: customer.as_deref(),
            return_url,
        },
        audit::of_changed(
            lease.user_id(),
            "ride.created",
            "ride",
            json!({ "idempotency_key_id": lease.key_id(), "amount_cents": params.amount_cents }),
        ),
    )?;
    Ok(ride)
}

/// The PaymentIntent, created and confirmed under a key derived from the
/// key row, from what the ride row recorded: a retry after a timeout or a
/// crash asks for the same payment and gets it, never a second one. Holds
/// no database connection.
pub fn pay(
    gateway: &dyn PaymentGateway,
    installation_id: uuid::Uuid,
    lease: &RideLease,
    ride: &Ride,
) -> Result<PaymentIntent, GatewayError> {
    gateway.create_intent(&CreateIntent {
        idempotency_key: derived_key(installation_id, PAYMENT_KEY_PURPOSE, lease.key_id()),
        amount_cents: ride.amount_cents,
        currency: ride.currency.clone(),
        customer: ride.customer.clone(),
        payment_method: ride.payment_method.clone(),
        capture_method: ride.capture_method,
        return_url: ride.return_url.clone().unwrap_or_default(),
        metadata: vec![
            ("ride_id".to_owned(), ride.id.to_string()),
            ("idempotency_key_id".to_owned(), lease.key_id().to_string()),
        ],
    })
}

/// What the gateway's answer makes of the pending ride: `authorized`,
/// `captured`, `requires_action` or `processing`. An intent in any other
/// state is a rejection.
fn answered(
    ride: &Ride,
    intent: &PaymentIntent,
) -> Result<Result<Settlement, GatewayError>, ServiceError> {
    if (intent.amount_cents, intent.currency.as_str())
        != (ride.amount_cents, ride.currency.as_str())
    {
        return Err(ServiceError::Internal(anyhow::anyhow!(
            "PaymentIntent {} is for {} {}, ride {} for {} {}",
            intent.id,
            intent.amount_cents,
            intent.currency,
            ride.id,
            ride.amount_cents,
            ride.currency
        )));
    }
    let answers = [
        RideStatus::Authorized,
        RideStatus::Captured,
        RideStatus::RequiresAction,
        RideStatus::Processing,
    ];
    Ok(settlement(RideStatus::Pending, intent)
        .filter(|settled| answers.contains(&settled.status))
        .ok_or_else(|| GatewayError::Rejected {
            message: format!(
                "PaymentIntent {} answered as {} on confirmation",
                intent.id, intent.status
            ),
        }))
}

/// RideCreated -> ChargeCompleted: what the gateway answered, recorded on
/// the ride, and for a ride paid at once its receipt staged in the same
/// statement (a held fare's receipt comes with its capture); a rejection
/// is returned as such. Only a holder of the key's lease moves a pending
/// ride on, so a ride found moved on means the lease was taken over (by the
/// gateway's event, say).
pub fn record_payment(
    conn: &mut PgConnection,
    ride: &Ride,
    intent: &PaymentIntent,
) -> Result<Result<Ride, GatewayError>, ServiceError> {
    let settled = match answered(ride, intent)? {
        Ok(settled) => settled,
        Err(rejected) => return Ok(Err(rejected)),
    };
    let ride = model::settle_recorded(
        conn,
        ride.id,
        may_follow(settled.status),
        &settled,
        receipt::OF_CHANGED,
    )?
    .ok_or(ServiceError::LeaseLost)?;
    Ok(Ok(ride))
}

/// RideCreated -> Finished as one statement with the key's final write: a
/// payment the gateway answered, recorded as `record_payment` does, with the
/// answer `finish_answered` gives. `None` for a rejection, which is
/// finished in a transaction.
pub fn payment_finishing(
    ride: &Ride,
    intent: &PaymentIntent,
) -> Result<Option<Finishing>, ServiceError> {
    let Ok(settled) = answered(ride, intent)? else {
        return Ok(None);
    };
    let response = finish_answered(&ride.settled(&settled));
    let from = may_follow(settled.status);
    let change = model::settle_finishing(ride.id, from, settled, receipt::OF_CHANGED);
    Ok(Some(Finishing::new(change, response)))
}

/// ChargeCompleted -> Finished: the answer stored. A 202 for a payment
/// still waiting for the rider or the bank is the key's final answer too:
/// the ride moves on by itself.
pub fn finish_answered(ride: &Ride) -> StoredResponse {
    let waiting = matches!(
        ride.status,
        RideStatus::RequiresAction | RideStatus::Processing
    );
    if waiting {
        return StoredResponse::accepted(ride.location(), ride.to_json());
    }
    StoredResponse::created(ride.location(), ride.to_json())
}

/// RideCreated -> Finished for a payment that failed for good: a decline
/// (402; the PaymentIntent it left behind recorded) or a rejection (502),
/// stored so that retries get the same answer.
pub fn finish_unpaid(
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
                .with_extension("ride_id", ride.id)
                .with_extension("code", code.as_str())
                .with_extension("decline_code", decline_code.clone()),
            payment_intent.clone(),
        ),
        other => {
            log::error!(
                "payment gateway rejected the payment of ride {}: {other}",
                ride.id
            );
            (
                RideStatus::PaymentFailed,
                Problem::new(ProblemKind::PaymentGatewayRejected, other.to_string())
                    .with_extension("ride_id", ride.id),
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
    };
    model::settle(conn, ride.id, &[RideStatus::Pending], &unpaid)?
        .ok_or(ServiceError::LeaseLost)?;
    Ok(StoredResponse::problem(&problem))
}
