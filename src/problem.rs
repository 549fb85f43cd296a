//! RFC 9457 problem details: the one error type of the HTTP layer.

use std::time::Duration;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::idempotency::{StoredHeaders, StoredResponse};
use crate::metrics;
use crate::service_error::ServiceError;
use crate::validation::FieldError;

pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";
const TYPE_PREFIX: &str = "https://ridepay.dev/problems/";

/// The stable problem types of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    IdempotencyKeyMissing,
    IdempotencyKeyInvalid,
    IdempotencyKeyInUse,
    IdempotencyKeyReused,
    InvalidRequest,
    Unauthorized,
    NotFound,
    MethodNotAllowed,
    PayloadTooLarge,
    UnsupportedMediaType,
    RequestTimeout,
    RateLimited,
    CardDeclined,
    PaymentGatewayRejected,
    PaymentGatewayUnavailable,
    RefundNotAllowed,
    InvalidSignature,
    ServiceUnavailable,
    InternalError,
}

impl ProblemKind {
    pub fn slug(self) -> &'static str {
        self.describe().0
    }

    pub fn title(self) -> &'static str {
        self.describe().1
    }

    pub fn status(self) -> StatusCode {
        StatusCode::from_u16(self.describe().2).expect("problem statuses are valid")
    }

    fn describe(self) -> (&'static str, &'static str, u16) {
        use ProblemKind::*;
        match self {
            IdempotencyKeyMissing => (
                "idempotency-key-missing",
                "Idempotency-Key header is required",
                400,
            ),
            IdempotencyKeyInvalid => (
                "idempotency-key-invalid",
                "Idempotency-Key header is invalid",
                400,
            ),
            IdempotencyKeyInUse => (
                "idempotency-key-in-use",
                "A request with this Idempotency-Key is in progress",
                409,
            ),
            IdempotencyKeyReused => (
                "idempotency-key-reused",
                "Idempotency-Key was used for a different request",
                422,
            ),
            InvalidRequest => ("invalid-request", "The request is invalid", 400),
            Unauthorized => ("unauthorized", "Authentication is required", 401),
            NotFound => ("not-found", "Not found", 404),
            MethodNotAllowed => ("method-not-allowed", "Method not allowed", 405),
            PayloadTooLarge => ("payload-too-large", "Request body is too large", 413),
            UnsupportedMediaType => ("unsupported-media-type", "Unsupported media type", 415),
            RequestTimeout => (
                "request-timeout",
                "The request body did not arrive in time",
                408,
            ),
            RateLimited => ("rate-limited", "Too many requests", 429),
            CardDeclined => ("card-declined", "The card was declined", 402),
            PaymentGatewayRejected => (
                "payment-gateway-rejected",
                "The payment gateway rejected the charge",
                502,
            ),
            PaymentGatewayUnavailable => (
                "payment-gateway-unavailable",
                "The payment gateway is unavailable",
                503,
            ),
            RefundNotAllowed => ("refund-not-allowed", "The refund is not allowed", 422),
            InvalidSignature => ("invalid-signature", "The webhook signature is invalid", 400),
            ServiceUnavailable => ("service-unavailable", "Service unavailable", 503),
            InternalError => ("internal-error", "Internal server error", 500),
        }
    }
}

/// A problem response: its body and the headers that go with it.
#[derive(Debug, Clone)]
pub struct Problem {
    kind: ProblemKind,
    detail: String,
    errors: Vec<FieldError>,
    extensions: Map<String, Value>,
    headers: Vec<(header::HeaderName, HeaderValue)>,
}

#[derive(Serialize)]
struct ProblemBody<'a> {
    #[serde(rename = "type")]
    type_uri: String,
    title: &'static str,
    status: u16,
    detail: &'a str,
    #[serde(skip_serializing_if = "<[FieldError]>::is_empty")]
    errors: &'a [FieldError],
    #[serde(flatten)]
    extensions: &'a Map<String, Value>,
}

impl Problem {
    pub fn new(kind: ProblemKind, detail: impl Into<String>) -> Self {
        Problem {
            kind,
            detail: detail.into(),
            errors: Vec::new(),
            extensions: Map::new(),
            headers: Vec::new(),
        }
    }

    pub fn invalid(errors: Vec<FieldError>) -> Self {
        let detail = match errors.as_slice() {
            [one] => format!("{}: {}", one.field, one.message),
            _ => format!("{} fields are invalid", errors.len()),
        };
        Problem {
            errors,
            ..Problem::new(ProblemKind::InvalidRequest, detail)
        }
    }

    /// Adds a member beside the standard ones (RFC 9457 extension members).
    pub fn with_extension(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.extensions.insert(name.to_owned(), value.into());
        self
    }

    pub fn with_retry_after(self, after: Duration) -> Self {
        // Whole seconds, rounded up: a client that waits that long is let in.
        let secs = after.as_secs_f64().ceil().max(1.0) as u64;
        self.with_header(header::RETRY_AFTER, HeaderValue::from(secs))
    }

    pub fn with_header(mut self, name: header::HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    pub fn kind(&self) -> ProblemKind {
        self.kind
    }

    /// The JSON body, serialised once so a stored copy is byte-identical.
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&ProblemBody {
            type_uri: format!("{TYPE_PREFIX}{}", self.kind.slug()),
            title: self.kind.title(),
            status: self.kind.status().as_u16(),
            detail: &self.detail,
            errors: &self.errors,
            extensions: &self.extensions,
        })
        .expect("a problem always serialises")
    }
}

impl Problem {
    /// The problem as a response to store with a finished key.
    pub fn stored(&self) -> StoredResponse {
        StoredResponse {
            status: self.kind.status().as_u16(),
            headers: StoredHeaders(vec![(
                "Content-Type".to_owned(),
                PROBLEM_CONTENT_TYPE.to_owned(),
            )]),
            body: self.body(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind.slug(), self.detail)
    }
}

impl ResponseError for Problem {
    fn status_code(&self) -> StatusCode {
        self.kind.status()
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code());
        response.insert_header((header::CONTENT_TYPE, PROBLEM_CONTENT_TYPE));
        for (name, value) in &self.headers {
            response.insert_header((name.clone(), value.clone()));
        }
        response.body(self.body())
    }
}

impl From<ServiceError> for Problem {
    fn from(err: ServiceError) -> Self {
        match err {
            ServiceError::Unauthorized => crate::auth::unauthorized("the API key is not valid"),
            ServiceError::NotFound => Problem::new(ProblemKind::NotFound, "no such resource"),
            ServiceError::Invalid(errors) => Problem::invalid(errors),
            ServiceError::RefundNotAllowed(detail) => {
                metrics::idempotency_outcome("refund_not_allowed");
                Problem::new(ProblemKind::RefundNotAllowed, detail)
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

impl From<actix_web::error::BlockingError> for Problem {
    fn from(err: actix_web::error::BlockingError) -> Self {
        ServiceError::Internal(anyhow::anyhow!("blocking task failed: {err}")).into()
    }
}
