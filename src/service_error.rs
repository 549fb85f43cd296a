//! The one error type of the service layer. Handlers turn it into a problem.

use std::cell::Cell;
use std::time::Duration;

use diesel::result::{DatabaseErrorKind, Error as DieselError};

use ridepay_gateway::GatewayError;

use crate::validation::FieldError;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// No user has the API key the caller sent.
    #[error("unknown API key")]
    Unauthorized,
    /// The caller's key is not one of those that may do this (a rider's on
    /// a platform route, the platform's making a ride).
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("not found")]
    NotFound,
    #[error("invalid request")]
    Invalid(Vec<FieldError>),
    /// What an endpoint refuses for a reason of its own domain (a refund
    /// beyond what remains, a ride in the wrong state): refused in the
    /// claim's transaction, nothing is written and the key is not consumed.
    /// `wire` says it as the contract's problem.
    #[error("{refusal:?}: {detail}")]
    Refused { refusal: Refusal, detail: String },
    /// A quota of the caller's is spent (test events an hour, say): refused
    /// like `Refused`, and may be asked again after `retry_after`.
    #[error("quota spent: {detail}")]
    QuotaSpent {
        detail: String,
        retry_after: Duration,
    },
    #[error("the idempotency key is in use by another request")]
    KeyInUse,
    #[error("the idempotency key was used for a different request")]
    KeyReused,
    #[error("the payment gateway is unavailable: {reason}")]
    GatewayUnavailable {
        reason: String,
        retry_after: Duration,
    },
    /// The gateway answers a call of the key with a failure it saved under
    /// the call's key, so no retry can learn what the call did; the key
    /// waits for reconciliation, which finds out from the gateway's lists.
    #[error("the payment gateway's answer is known only to reconciliation: {reason}")]
    AwaitingReconciliation { reason: String },
    /// The key is too old to resume safely, or a worker gave up on it.
    #[error("the idempotency key needs an operator's attention")]
    NeedsAttention,
    /// Another worker took the key's lease over; this one must stop at once.
    #[error("the idempotency key's lease was taken over")]
    LeaseLost,
    #[error("the database is unavailable: {0}")]
    DatabaseUnavailable(String),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// Why an endpoint refuses a request, in its domain's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The ride's status does not allow what was asked.
    InvalidRideState,
    /// The card's hold lapsed before the ride was settled.
    AuthorizationExpired,
    /// Nothing, or not that much, remains to refund.
    RefundNotAllowed,
    /// The user has all the webhook destinations they may have.
    WebhookEndpointLimit,
    /// The driver cannot be paid yet (or any more): their account is not
    /// active at the gateway.
    DriverNotPayable,
}

impl ServiceError {
    pub fn refused(refusal: Refusal, detail: impl Into<String>) -> Self {
        ServiceError::Refused {
            refusal,
            detail: detail.into(),
        }
    }
}

impl From<DieselError> for ServiceError {
    fn from(err: DieselError) -> Self {
        // A COMMIT that failed, and whose ROLLBACK failed too (the session
        // is gone, as when the server restarts): what the COMMIT met decides.
        if let DieselError::RollbackErrorOnCommit { commit_error, .. } = err {
            return ServiceError::from(*commit_error);
        }
        match &err {
            // The request may succeed when retried, on another connection:
            // a server that turned read-only (25006: a primary demoted, or
            // made read-only for a switchover) will not write on this
            // session again; a broken connection (class 08), a session
            // terminated or a server shutting down or starting up
            // (57P01-57P03), or a pooler in front that lost its server
            // (PgBouncer's 08P01), is of no more use. Diesel reads most of
            // these codes as unknown, timeouts too (57014, 55P03): the pool
            // drops the connection that met any of them, and a new one
            // finds the primary (`target_session_attrs=read-write`, or the
            // proxy in front). A timeout costs a reconnect.
            DieselError::DatabaseError(
                DatabaseErrorKind::ReadOnlyTransaction
                | DatabaseErrorKind::ClosedConnection
                | DatabaseErrorKind::UnableToSendCommand
                | DatabaseErrorKind::Unknown,
                _,
            ) => {
                CONNECTION_UNUSABLE.set(true);
                ServiceError::DatabaseUnavailable(err.to_string())
            }
            // A serialization failure is the transaction's, not the session's.
            DieselError::DatabaseError(DatabaseErrorKind::SerializationFailure, _)
            | DieselError::BrokenTransactionManager => {
                ServiceError::DatabaseUnavailable(err.to_string())
            }
            _ => ServiceError::Internal(anyhow::Error::new(err)),
        }
    }
}

thread_local! {
    /// Set when a database error on this thread made its connection of no
    /// more use; the pool reads it when the thread's connection comes back.
    static CONNECTION_UNUSABLE: Cell<bool> = const { Cell::new(false) };
}

/// Whether a database error on this thread, since the last call, made its
/// connection of no more use. A connection is used by one thread at a
/// time, and comes back to the pool on the thread that used it: the pool
/// asks as it takes it back, and drops it if so.
pub fn take_connection_unusable() -> bool {
    CONNECTION_UNUSABLE.take()
}

impl From<diesel::r2d2::PoolError> for ServiceError {
    fn from(err: diesel::r2d2::PoolError) -> Self {
        ServiceError::DatabaseUnavailable(err.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_lost_with_its_session_is_unavailable_and_drops_the_connection() {
        let closed = || {
            Box::new(DieselError::DatabaseError(
                DatabaseErrorKind::ClosedConnection,
                Box::new("server closed the connection unexpectedly".to_owned()),
            ))
        };
        let err = DieselError::RollbackErrorOnCommit {
            rollback_error: closed(),
            commit_error: closed(),
        };
        assert!(matches!(
            ServiceError::from(err),
            ServiceError::DatabaseUnavailable(_)
        ));
        assert!(take_connection_unusable());
    }
}
