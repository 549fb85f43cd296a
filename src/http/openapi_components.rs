//! The OpenAPI document's shared parts, which every handler's annotations
//! name: the problem document, the `Idempotency-Key` header, the problems
//! every API route and every idempotent POST may answer. It imports no
//! handler, so handlers and the document (`openapi.rs`) both stand on it.

use serde::Serialize;
use utoipa::{IntoParams, IntoResponses, ToSchema};

use crate::validation::FieldError;

/// An RFC 9457 problem, as `crate::wire::problem::Problem` writes it.
#[derive(Serialize, ToSchema)]
#[schema(as = Problem)]
pub struct ProblemDocument {
    /// `https://ridepay.dev/problems/<slug>`, a stable slug per kind of problem.
    #[serde(rename = "type")]
    pub type_uri: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// The rejected fields of an invalid request.
    #[schema(nullable = false)]
    pub errors: Option<Vec<FieldError>>,
    /// On `card-declined`, `payment-gateway-rejected`, and the
    /// `invalid-request` of a payment method the gateway does not have: the
    /// ride created (an integer in answers stored before public ids,
    /// replayed as stored).
    #[schema(nullable = false, pattern = "^ride_[a-z2-7]{29}$")]
    pub ride_id: Option<String>,
    /// On `payment-gateway-rejected` for a refund: the refund, `failed`.
    #[schema(nullable = false, pattern = "^rfnd_[a-z2-7]{29}$")]
    pub refund_id: Option<String>,
    /// On `card-declined`: the gateway's error code.
    #[schema(nullable = false)]
    pub code: Option<String>,
    /// On `card-declined`: the gateway's decline code.
    pub decline_code: Option<String>,
}

/// The `Idempotency-Key` request header.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct IdempotencyKeyHeader {
    /// 1 to 255 printable ASCII characters, not blank; scoped to the caller.
    /// An RFC 8941 string (`"abc"`) names the same key as its content.
    #[param(
        rename = "Idempotency-Key",
        min_length = 1,
        max_length = 255,
        pattern = "^[!#-~]([ -~]{0,253}[!-~])?$"
    )]
    pub idempotency_key: String,
}

/// Answers every authenticated route may give.
#[derive(IntoResponses)]
pub enum ApiProblems {
    /// No or unknown API key.
    #[response(status = 401, content_type = "application/problem+json", headers(("WWW-Authenticate" = String)))]
    Unauthorized(ProblemDocument),
    /// Too many requests for this API key.
    #[response(status = 429, content_type = "application/problem+json", headers(("Retry-After" = String)))]
    RateLimited(ProblemDocument),
    /// An unexpected error.
    #[response(status = 500, content_type = "application/problem+json")]
    Internal(ProblemDocument),
    /// A dependency is unavailable; retry (with the same `Idempotency-Key`).
    #[response(status = 503, content_type = "application/problem+json", headers(("Retry-After" = String)))]
    Unavailable(ProblemDocument),
}

/// The `Stripe-Signature` header of the gateway's events.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct StripeSignatureHeader {
    /// `t=<unix time>,v1=<hex HMAC-SHA256>[,v1=...]`
    #[param(rename = "Stripe-Signature")]
    pub stripe_signature: String,
}

/// What an event came to.
#[derive(Serialize, ToSchema)]
#[schema(as = WebhookReceipt)]
pub struct Received {
    pub received: bool,
    /// `applied`, `ignored` or `duplicate`.
    #[schema(pattern = "^(applied|ignored|duplicate)$")]
    pub result: String,
}

/// What `POST /webhooks/stripe` and `/webhooks/stripe/connect` answer; the
/// gateway redelivers on any but a 200 or a 400.
#[derive(IntoResponses)]
pub enum WebhookAnswers {
    /// Received: applied, ignored, or a duplicate.
    #[response(status = 200, content_type = "application/json")]
    Received(Received),
    /// `invalid-signature` (bad, missing or stale signature), or not an
    /// event (`invalid-request`); nothing written.
    #[response(status = 400, content_type = "application/problem+json")]
    Invalid(ProblemDocument),
    /// The body did not arrive within `HTTP_BODY_TIMEOUT_MS`.
    #[response(status = 408, content_type = "application/problem+json")]
    BodyTimeout(ProblemDocument),
    /// Body over 256 KiB.
    #[response(status = 413, content_type = "application/problem+json")]
    TooLarge(ProblemDocument),
    /// Body not `application/json`.
    #[response(status = 415, content_type = "application/problem+json")]
    NotJson(ProblemDocument),
    /// Too many requests from this address.
    #[response(status = 429, content_type = "application/problem+json", headers(("Retry-After" = String)))]
    RateLimited(ProblemDocument),
    /// An unexpected error; redeliver.
    #[response(status = 500, content_type = "application/problem+json")]
    Internal(ProblemDocument),
    /// The gateway or the database is unavailable, or the ride's key is in
    /// flight; nothing written, redeliver.
    #[response(status = 503, content_type = "application/problem+json", headers(("Retry-After" = String)))]
    Unavailable(ProblemDocument),
}

/// Answers every idempotent POST may give before its own.
#[derive(IntoResponses)]
pub enum IdempotentPostProblems {
    /// Invalid or missing `Idempotency-Key`, or an invalid body (nothing
    /// written, the key not consumed).
    #[response(status = 400, content_type = "application/problem+json")]
    Invalid(ProblemDocument),
    /// Another request with this key is in flight.
    #[response(status = 409, content_type = "application/problem+json", headers(("Retry-After" = String)))]
    InUse(ProblemDocument),
    /// The body did not arrive within `HTTP_BODY_TIMEOUT_MS`.
    #[response(status = 408, content_type = "application/problem+json")]
    BodyTimeout(ProblemDocument),
    /// Body over 16 KiB.
    #[response(status = 413, content_type = "application/problem+json")]
    TooLarge(ProblemDocument),
    /// Body not `application/json`.
    #[response(status = 415, content_type = "application/problem+json")]
    UnsupportedMediaType(ProblemDocument),
}
