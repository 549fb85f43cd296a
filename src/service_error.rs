//! The one error type of the service layer. Handlers turn it into a problem.

use std::cell::Cell;
use std::time::Duration;

use diesel::result::{DatabaseErrorKind, Error as DieselError};

use crate::problem::ProblemKind;
use crate::validation::FieldError;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// No user has the API key the caller sent.
    #[error("unknown API key")]
    Unauthorized,
    #[error("not found")]
    NotFound,
    #[error("invalid request")]
    Invalid(Vec<FieldError>),
    /// What an endpoint refuses for a reason of its own domain (a refund
    /// beyond what remains, a ride in the wrong state), as the contract's
    /// problem `kind` (a 4xx) says it: refused in the claim's transaction,
    /// nothing is written and the key is not consumed. An endpoint needs no
    /// variant of its own for its refusals.
    #[error("{}: {detail}", kind.slug())]
    Refused { kind: ProblemKind, detail: String },
    #[error("the idempotency key is in use by another request")]
    KeyInUse,
    #[error("the idempotency key was used for a different request")]
    KeyReused,
    #[error("the payment gateway is unavailable: {reason}")]
    GatewayUnavailable {
        reason: String,
        retry_after: Duration,
    },
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

impl ServiceError {
    pub fn refused(kind: ProblemKind, detail: impl Into<String>) -> Self {
        ServiceError::Refused {
            kind,
            detail: detail.into(),
        }
    }
}

impl From<DieselError> for ServiceError {
    fn from(err: DieselError) -> Self {
        match &err {
            // A server that turned read-only (25006: a primary demoted to a
            // standby, or made read-only for a switchover) will not write
            // on this session again: the pool drops the connection, and a
            // new one finds the primary (`target_session_attrs=read-write`,
            // or the proxy in front).
            DieselError::DatabaseError(DatabaseErrorKind::ReadOnlyTransaction, _) => {
                SERVER_READ_ONLY.set(true);
                ServiceError::DatabaseUnavailable(err.to_string())
            }
            // Broken connections (class 08), timeouts (statement, lock),
            // sessions terminated or a server shutting down or starting up
            // (57P01-57P03, which Diesel reads as unknown): the request may
            // succeed when retried.
            DieselError::DatabaseError(
                DatabaseErrorKind::ClosedConnection
                | DatabaseErrorKind::UnableToSendCommand
                | DatabaseErrorKind::SerializationFailure
                | DatabaseErrorKind::Unknown,
                _,
            )
            | DieselError::BrokenTransactionManager => {
                ServiceError::DatabaseUnavailable(err.to_string())
            }
            _ => ServiceError::Internal(anyhow::Error::new(err)),
        }
    }
}

thread_local! {
    /// Set when a database error on this thread said its server is
    /// read-only; the pool reads it when the thread's connection comes back.
    static SERVER_READ_ONLY: Cell<bool> = const { Cell::new(false) };
}

/// Whether a database error on this thread, since the last call, said that
/// its connection's server is read-only. A connection is used by one thread
/// at a time, and comes back to the pool on the thread that used it: the
/// pool asks as it takes it back, and drops it if so.
pub fn take_server_read_only() -> bool {
    SERVER_READ_ONLY.take()
}

impl From<diesel::r2d2::PoolError> for ServiceError {
    fn from(err: diesel::r2d2::PoolError) -> Self {
        ServiceError::DatabaseUnavailable(err.to_string())
    }
}
