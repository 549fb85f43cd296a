//! RFC 9457 problem details as plain data: what went wrong, in the
//! contract's stable types, with their statuses and headers; and what each
//! failure of the service layer answers. Endpoints build them (a declined
//! charge is stored with its key as one); the http layer sends them.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::idempotency::{StoredHeaders, StoredResponse};
use crate::service_error::{Refusal, ServiceError};
use crate::telemetry::metrics;
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
    Forbidden,
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
    InvalidRideState,
    AuthorizationExpired,
    WebhookDestinationNotAllowed,
    WebhookEndpointLimit,
    DriverNotPayable,
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

    pub fn status(self) -> u16 {
        self.describe().2
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
            Forbidden => ("forbidden", "This key may not do this", 403),
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
                "The payment gateway rejected the payment",
                502,
            ),
            PaymentGatewayUnavailable => (
                "payment-gateway-unavailable",
                "The payment gateway is unavailable",
                503,
            ),
            RefundNotAllowed => ("refund-not-allowed", "The refund is not allowed", 422),
            InvalidRideState => (
                "invalid-ride-state",
                "The ride's state does not allow this",
                422,
            ),
            DriverNotPayable => (
                "driver-not-payable",
                "The driver cannot be paid: their account is not active",
                422,
            ),
            AuthorizationExpired => (
                "authorization-expired",
                "The card's authorization has expired",
                422,
            ),
            WebhookDestinationNotAllowed => (
                "webhook-destination-not-allowed",
                "The webhook destination may not be reached",
                422,
            ),
            WebhookEndpointLimit => (
                "webhook-endpoint-limit",
                "No more webhook endpoints may be registered",
                422,
            ),
            InvalidSignature => ("invalid-signature", "The webhook signature is invalid", 400),
            ServiceUnavailable => ("service-unavailable", "Service unavailable", 503),
            InternalError => ("internal-error", "Internal server error", 500),
        }
    }
}

/// A problem: its body and the headers that go with it.
#[derive(Debug, Clone)]
pub struct Problem {
    kind: ProblemKind,
    detail: String,
    errors: Vec<FieldError>,
    extensions: Map<String, Value>,
    headers: Vec<(&'static str, String)>,
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

    /// A 401, with the `WWW-Authenticate` challenge the contract asks for.
    pub fn unauthorized(detail: &str) -> Self {
        Problem::new(ProblemKind::Unauthorized, detail).with_header("WWW-Authenticate", "Bearer")
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
        self.with_header("Retry-After", secs.to_string())
    }

    /// A header to send with the problem (`name` one of ridepay's own).
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub fn kind(&self) -> ProblemKind {
        self.kind
    }

    pub fn status(&self) -> u16 {
        self.kind.status()
    }

    pub fn headers(&self) -> &[(&'static str, String)] {
        &self.headers
    }

    /// The JSON body, serialised once so a stored copy is byte-identical.
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&ProblemBody {
            type_uri: format!("{TYPE_PREFIX}{}", self.kind.slug()),
            title: self.kind.title(),
            status: self.kind.status(),
            detail: &self.detail,
            errors: &self.errors,
            extensions: &self.extensions,
        })
        .expect("a problem always serialises")
    }
}

/// A problem as the answer to store with a finished key.
pub fn stored(problem: &Problem) -> StoredResponse {
    StoredResponse {
        status: problem.status(),
        headers: StoredHeaders(vec![(
            "Content-Type".to_owned(),
            PROBLEM_CONTENT_TYPE.to_owned(),
        )]),
        body: problem.body(),
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind.slug(), self.detail)
    }
}

/// What each service failure tells the client, counted and logged once here.
impl From<ServiceError> for Problem {
    fn from(err: ServiceError) -> Self {
        match err {
            ServiceError::Unauthorized => Problem::unauthorized("the API key is not valid"),
            ServiceError::NotFound => Problem::new(ProblemKind::NotFound, "no such resource"),
            ServiceError::Forbidden(detail) => Problem::new(ProblemKind::Forbidden, detail),
            ServiceError::Invalid(errors) => Problem::invalid(errors),
            ServiceError::Refused { refusal, detail } => {
                let kind = match refusal {
                    Refusal::InvalidRideState => ProblemKind::InvalidRideState,
                    Refusal::AuthorizationExpired => ProblemKind::AuthorizationExpired,
                    Refusal::RefundNotAllowed => ProblemKind::RefundNotAllowed,
                    Refusal::WebhookEndpointLimit => ProblemKind::WebhookEndpointLimit,
                    Refusal::DriverNotPayable => ProblemKind::DriverNotPayable,
                };
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
