//! `POST /api/rides` as a sequence of atomic phases: claim, create the ride,
//! charge, record the charge, store the response. A retry, or a worker, resumes
//! from the recovery point the key reached.

use std::time::Duration;

use diesel::Connection;

use super::model;
use super::phases::{self, RideLease};
use super::recovery_point::RecoveryPoint;
use super::request::RideParams;
use crate::context::ServiceContext;
use crate::crash;
use crate::idempotency::{
    self, in_transaction, Claim, IdempotencyKey, IdempotentRequest, Lookup, StoredResponse,
};
use crate::payments::GatewayError;
use crate::service_error::ServiceError;
use crate::users::User;
use crate::validation::FieldError;

/// The answer to a ride request, and whether it is a replay.
#[derive(Debug)]
pub struct Outcome {
    pub response: StoredResponse,
    pub replayed: bool,
}

/// How long a client should wait after a gateway failure that says nothing.
const DEFAULT_GATEWAY_RETRY_AFTER: Duration = Duration::from_secs(2);

pub fn create_ride(
    context: &ServiceContext,
    user: &User,
    key: &IdempotencyKey,
    path: &str,
    params: &RideParams,
) -> Result<Outcome, ServiceError> {
    let canonical = params.canonical();
    let request = IdempotentRequest {
        user_id: user.id,
        key,
        method: "POST",
        path,
        params: &canonical,
    };
    let mut conn = context.pool.get()?;
    match idempotency::lookup::<RecoveryPoint>(&mut conn, &request, &context.key_policy)? {
        Lookup::Replay(response) => return Ok(replayed(response)),
        Lookup::InUse => return Err(ServiceError::KeyInUse),
        Lookup::Reused => return Err(ServiceError::KeyReused),
        Lookup::NeedsAttention => return Err(ServiceError::NeedsAttention),
        Lookup::Claimable => {}
    }
    // A charge needs a source: refused before anything is written, so the key
    // is not consumed.
    if params.payment_source.is_none() && user.stripe_customer_id.is_none() {
        return Err(ServiceError::Invalid(vec![FieldError::new(
            "payment_source",
            "is required: the user has no stored customer to charge",
        )]));
    }
    // The claim of a new key and RideCreated share one transaction: nothing
    // external happens between them.
    let claim = conn.transaction(|conn| {
        let mut claim = idempotency::claim::<RecoveryPoint>(conn, &request, &context.key_policy)?;
        if let Claim::Acquired(lease) = &mut claim {
            crash::point(crash::AFTER_CLAIM);
            if lease.recovery_point() == RecoveryPoint::Started {
                phases::create_ride(conn, lease, params)?;
            }
        }
        Ok::<_, ServiceError>(claim)
    })?;
    drop(conn);
    crash::point(crash::AFTER_RIDE_CREATED);
    match claim {
        Claim::Acquired(lease) => Ok(Outcome {
            response: resume(context, lease, params)?,
            replayed: false,
        }),
        Claim::Replay(response) => Ok(replayed(response)),
        Claim::InUse => Err(ServiceError::KeyInUse),
        Claim::Reused => Err(ServiceError::KeyReused),
        Claim::NeedsAttention => Err(ServiceError::NeedsAttention),
    }
}

fn replayed(response: StoredResponse) -> Outcome {
    Outcome {
        response,
        replayed: true,
    }
}

/// Drives a claimed key from its recovery point to Finished. On any failure the
/// lease is released where it stands, so a retry can resume at once.
pub fn resume(
    context: &ServiceContext,
    mut lease: RideLease,
    params: &RideParams,
) -> Result<StoredResponse, ServiceError> {
    let result = run_phases(context, &mut lease, params);
    if let Err(err) = &result {
        if !matches!(err, ServiceError::LeaseLost) {
            let released = context
                .pool
                .get()
                .map_err(ServiceError::from)
                .and_then(|mut conn| lease.release(&mut conn));
            if let Err(release_err) = released {
                log::warn!(
                    "could not release idempotency key {} ({release_err}); it frees itself when the lease expires",
                    lease.key_id()
                );
            }
        }
    }
    result
}

fn run_phases(
    context: &ServiceContext,
    lease: &mut RideLease,
    params: &RideParams,
) -> Result<StoredResponse, ServiceError> {
    loop {
        match lease.recovery_point() {
            RecoveryPoint::Started => {
                let mut conn = context.pool.get()?;
                in_transaction(&mut conn, lease, |conn, lease| {
                    phases::create_ride(conn, lease, params)
                })?;
            }
            RecoveryPoint::RideCreated => {
                let ride = model::find_by_key(&mut *context.pool.get()?, lease.key_id())?;
                // No pooled connection is held while the gateway works.
                let charged = phases::charge(
                    context.gateway.as_ref(),
                    context.installation_id,
                    lease,
                    &ride,
                );
                crash::point(crash::AFTER_CHARGE);
                let mut conn = context.pool.get()?;
                return match charged {
                    // ChargeCompleted and Finished share one transaction.
                    Ok(charge) => in_transaction(&mut conn, lease, |conn, lease| {
                        phases::record_charge(conn, lease, &ride, &charge)?;
                        crash::point(crash::AFTER_CHARGE_COMPLETED);
                        phases::finish_charged(conn, lease)
                    }),
                    Err(
                        failure @ (GatewayError::Declined { .. } | GatewayError::Rejected { .. }),
                    ) => in_transaction(&mut conn, lease, |conn, lease| {
                        phases::finish_unpaid(conn, lease, &ride, &failure)
                    }),
                    Err(failure) => Err(gateway_unavailable(failure)),
                };
            }
            RecoveryPoint::ChargeCompleted => {
                let mut conn = context.pool.get()?;
                return in_transaction(&mut conn, lease, phases::finish_charged);
            }
            RecoveryPoint::Finished => {
                let mut conn = context.pool.get()?;
                let record = idempotency::KeyRecord::load(&mut conn, lease.key_id())?;
                return record.stored_response().ok_or_else(|| {
                    anyhow::anyhow!("finished key {} has no response", lease.key_id()).into()
                });
            }
        }
    }
}

fn gateway_unavailable(failure: GatewayError) -> ServiceError {
    let retry_after = match &failure {
        GatewayError::Unavailable {
            retry_after: Some(after),
            ..
        } => *after,
        GatewayError::Misconfigured { reason } => {
            log::error!("payment gateway needs an operator: {reason}");
            Duration::from_secs(30)
        }
        _ => DEFAULT_GATEWAY_RETRY_AFTER,
    };
    ServiceError::GatewayUnavailable {
        reason: failure.to_string(),
        retry_after,
    }
}
