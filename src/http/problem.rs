//! Problems as actix responses, and what each service failure answers.

use std::time::Duration;

use actix_web::http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use crate::problem::{Problem, ProblemKind, PROBLEM_CONTENT_TYPE};
use crate::service_error::ServiceError;
use crate::telemetry::metrics;

impl ResponseError for Problem {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status()).expect("problem statuses are valid")
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code());
        response.insert_header((CONTENT_TYPE, PROBLEM_CONTENT_TYPE));
        for (name, value) in self.headers() {
            let name = HeaderName::try_from(*name);
            if let (Ok(name), Ok(value)) = (name, HeaderValue::try_from(value.as_str())) {
                response.insert_header((name, value));
            }
        }
        response.body(self.body())
    }
}

impl From<ServiceError> for Problem {
    fn from(err: ServiceError) -> Self {
        from_service_error(err)
    }
}

/// What each service failure tells the client, counted and logged once here.
pub fn from_service_error(err: ServiceError) -> Problem {
    {
        match err {
            ServiceError::Unauthorized => super::auth::unauthorized("the API key is not valid"),
            ServiceError::NotFound => Problem::new(ProblemKind::NotFound, "no such resource"),
            ServiceError::Invalid(errors) => Problem::invalid(errors),
            ServiceError::Refused { kind, detail } => {
                metrics::idempotency_outcome(kind.slug());
                Problem::new(kind, detail)
            }
            ServiceError::QuotaSpent {
                detail,
                retry_after,
            } => {
                metrics::idempotency_outcome(ProblemKind::RateLimited.slug());
                Problem::new(ProblemKind::RateLimited, detail).with_retry_after(retry_after)
            }
            ServiceError::KeyInUse => {
                metrics::idempotency_outcome("in_use");
                Problem::new(
                    ProblemKind::IdempotencyKeyInUse,
                    "another request with this Idempotency-Key is being processed; retry later",
                )
                .with_retry_after(Duration::from_secs(1))
            }
            ServiceError::KeyReused => {
                metrics::idempotency_outcome("reused");
                Problem::new(
                    ProblemKind::IdempotencyKeyReused,
                    "this Idempotency-Key was already used with a different method, path or body",
                )
            }
            ServiceError::GatewayUnavailable {
                reason,
                retry_after,
            } => {
                log::warn!("payment gateway unavailable: {reason}");
                metrics::idempotency_outcome("transient");
                Problem::new(
                    ProblemKind::PaymentGatewayUnavailable,
                    "the payment gateway did not complete the request; retry with the same \
                     Idempotency-Key, it will not be made twice",
                )
                .with_retry_after(retry_after)
            }
            ServiceError::AwaitingReconciliation { reason } => {
                log::warn!("waiting for reconciliation: {reason}");
                metrics::idempotency_outcome("reconciling");
                Problem::new(
                    ProblemKind::PaymentGatewayUnavailable,
                    "the payment gateway lost its answer to this request; reconciliation is \
                     finding out what it did. Retry with the same Idempotency-Key: it will not \
                     be made twice",
                )
                .with_retry_after(RECONCILING_RETRY_AFTER)
            }
            ServiceError::LeaseLost => {
                log::warn!("idempotency lease lost to another worker");
                Problem::new(
                    ProblemKind::ServiceUnavailable,
                    "the request was taken over by another worker; retry with the same \
                     Idempotency-Key",
                )
                .with_retry_after(Duration::from_secs(1))
            }
            ServiceError::NeedsAttention => Problem::new(
                ProblemKind::InternalError,
                "this request can no longer be completed automatically; it has been left \
                 for an operator to settle. Do not retry it with a new key before checking \
                 whether you were charged",
            ),
            ServiceError::DatabaseUnavailable(reason) => {
                log::error!("database unavailable: {reason}");
                Problem::new(
                    ProblemKind::ServiceUnavailable,
                    "the service is temporarily unavailable; retry later",
                )
                .with_retry_after(Duration::from_secs(1))
            }
            ServiceError::Internal(err) => {
                log::error!("internal error: {err:#}");
                Problem::new(ProblemKind::InternalError, "an unexpected error occurred")
            }
        }
    }
}

/// What a client waiting for reconciliation is asked to wait: about one of
/// its passes (`RECONCILE_INTERVAL_SECS`' default).
const RECONCILING_RETRY_AFTER: Duration = Duration::from_secs(60);

impl From<actix_web::error::BlockingError> for Problem {
    fn from(err: actix_web::error::BlockingError) -> Self {
        ServiceError::Internal(anyhow::anyhow!("blocking task failed: {err}")).into()
    }
}
