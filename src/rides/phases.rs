//! The phases of `POST /api/rides`: the database work of each atomic phase,
//! in the caller's transaction, and the charge, made between transactions.
//! The flow writes the key row (`service::RidePhases` says which phase runs
//! from which recovery point).

use diesel::PgConnection;
use serde_json::json;

use super::model::{self, NewRide, Ride, RideStatus};
use super::receipt;
use super::recovery_point::RecoveryPoint;
use super::request::RideParams;
use crate::idempotency::{Lease, StoredResponse};
use crate::payments::{derived_key, Charge, ChargeRequest, GatewayError, PaymentGateway};
use crate::problem::{Problem, ProblemKind};
use crate::service_error::ServiceError;
use crate::validation::FieldError;
use crate::{audit, users};

/// Names this endpoint's effect in its derived gateway keys.
pub const CHARGE_KEY_PURPOSE: &str = "ride-charge";

pub type RideLease = Lease<RecoveryPoint>;

/// Started -> RideCreated: the ride, pending, and its audit record.
pub fn create_ride(
    conn: &mut PgConnection,
    lease: &RideLease,
    params: &RideParams,
) -> Result<Ride, ServiceError> {
    let source = match &params.payment_source {
        Some(source) => source.clone(),
        None => users::find(conn, lease.user_id())?
            .stripe_customer_id
            .ok_or_else(|| {
                ServiceError::Invalid(vec![FieldError::new(
                    "payment_source",
                    "is required: the user has no stored customer to charge",
                )])
            })?,
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
            payment_source: &source,
        },
    )?;
    audit::record(
        conn,
        lease.user_id(),
        "ride.created",
        "ride",
        ride.id.0,
        json!({ "idempotency_key_id": lease.key_id(), "amount_cents": ride.amount_cents }),
    )?;
    Ok(ride)
}

/// The charge, under a key derived from the key row: a retry after a timeout or
/// a crash asks for the same charge and gets it, never a second one. Holds no
/// database connection.
pub fn charge(
    gateway: &dyn PaymentGateway,
    installation_id: uuid::Uuid,
    lease: &RideLease,
    ride: &Ride,
) -> Result<Charge, GatewayError> {
    gateway.charge(&ChargeRequest {
        idempotency_key: derived_key(installation_id, CHARGE_KEY_PURPOSE, lease.key_id()),
        amount_cents: ride.amount_cents,
        currency: ride.currency.clone(),
        source: ride.payment_source.clone(),
        description: format!("ridepay ride {}", ride.id),
        metadata: vec![
            ("ride_id".to_owned(), ride.id.to_string()),
            ("idempotency_key_id".to_owned(), lease.key_id().to_string()),
        ],
    })
}

/// RideCreated -> ChargeCompleted: the charge recorded on the ride. Returns
/// the ride as charged.
pub fn record_charge(
    conn: &mut PgConnection,
    ride: &Ride,
    charge: &Charge,
) -> Result<Ride, ServiceError> {
    if (charge.amount_cents, charge.currency.as_str())
        != (ride.amount_cents, ride.currency.as_str())
    {
        return Err(ServiceError::Internal(anyhow::anyhow!(
            "charge {} is for {} {}, ride {} for {} {}",
            charge.id,
            charge.amount_cents,
            charge.currency,
            ride.id,
            ride.amount_cents,
            ride.currency
        )));
    }
    Ok(model::settle(
        conn,
        ride.id,
        RideStatus::Charged,
        Some(&charge.id),
    )?)
}

/// ChargeCompleted -> Finished: the 201 with the charged ride stored, and the
/// receipt staged in the same transaction.
pub fn finish_charged(
    conn: &mut PgConnection,
    ride: &Ride,
) -> Result<StoredResponse, ServiceError> {
    receipt::stage(conn, ride)?;
    Ok(StoredResponse::created(ride.location(), ride.to_json()))
}

/// RideCreated -> Finished for a charge that failed for good: a decline (402)
/// or a rejection (502), stored so that retries get the same answer.
pub fn finish_unpaid(
    conn: &mut PgConnection,
    ride: &Ride,
    failure: &GatewayError,
) -> Result<StoredResponse, ServiceError> {
    let (status, problem) = match failure {
        GatewayError::Declined {
            code,
            decline_code,
            message,
            ..
        } => (
            RideStatus::PaymentDeclined,
            Problem::new(ProblemKind::CardDeclined, message.clone())
                .with_extension("ride_id", ride.id)
                .with_extension("code", code.as_str())
                .with_extension("decline_code", decline_code.clone()),
        ),
        other => {
            log::error!(
                "payment gateway rejected the charge for ride {}: {other}",
                ride.id
            );
            (
                RideStatus::PaymentFailed,
                Problem::new(ProblemKind::PaymentGatewayRejected, other.to_string())
                    .with_extension("ride_id", ride.id),
            )
        }
    };
    model::settle(conn, ride.id, status, None)?;
    Ok(StoredResponse::problem(&problem))
}
