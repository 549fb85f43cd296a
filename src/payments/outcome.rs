//! What the answer to a gateway call means for the key that made it, the
//! same for every endpoint with an external effect.

use std::time::Duration;

use crate::service_error::ServiceError;
use ridepay_gateway::GatewayError;

/// A gateway call's final answer, which the endpoint's next atomic phase
/// records with the key.
#[derive(Debug, Clone)]
pub enum Final<T> {
    /// What the call made.
    Made(T),
    /// A final refusal: a decline or a rejection.
    Refused(GatewayError),
}

/// Sorts a gateway call's answer for the flow: an final answer, or a 503
/// that leaves the key where it stands, for a retry under the same derived
/// key (or, after a failure the gateway saved under it, for
/// reconciliation).
pub fn final_answer<T>(answer: Result<T, GatewayError>) -> Result<Final<T>, ServiceError> {
    match answer {
        Ok(made) => Ok(Final::Made(made)),
        Err(failure @ (GatewayError::Declined { .. } | GatewayError::Rejected { .. })) => {
            Ok(Final::Refused(failure))
        }
        Err(GatewayError::SavedFailure { reason }) => {
            Err(ServiceError::AwaitingReconciliation { reason })
        }
        Err(failure) => Err(unavailable(failure)),
    }
}

/// The 503 of a failure that a retry with the same key may cure.
pub fn unavailable(failure: GatewayError) -> ServiceError {
    let retry_after = match &failure {
        GatewayError::Unavailable {
            retry_after: Some(after),
            ..
        } => *after,
        GatewayError::Misconfigured { reason } => {
            log::error!("payment gateway needs an operator: {reason}");
            Duration::from_secs(30)
        }
        _ => DEFAULT_RETRY_AFTER,
    };
    ServiceError::GatewayUnavailable {
        reason: failure.to_string(),
        retry_after,
    }
}

/// How long a client should wait after a gateway failure that says nothing.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(2);
