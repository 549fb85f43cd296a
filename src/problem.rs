//! RFC 9457 problem details as plain data: what went wrong, in the
//! contract's stable types. Endpoints build them (a declined charge is
//! stored with its key as one); the http layer turns them into responses.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

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
    InvalidRideState,
    AuthorizationExpired,
    WebhookDestinationNotAllowed,
    WebhookEndpointLimit,
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

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind.slug(), self.detail)
    }
}
