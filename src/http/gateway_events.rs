//! `POST /webhooks/stripe` and `POST /webhooks/stripe/connect`: the same
//! verification, each with its own secret, as Stripe signs a Connect
//! endpoint's events with a secret of its own.

use std::time::Duration;

use actix_web::{web, HttpRequest, HttpResponse};

use crate::context::ServiceContext;
use crate::gateway_events::apply::{self, NotYet};
use crate::gateway_events::connect;
use crate::gateway_events::event::{Disposition, Event};
use crate::http::body::read_json;
use crate::http::openapi_components::{Received, StripeSignatureHeader, WebhookAnswers};
use crate::http::request_id;
use crate::payments::stripe::signature;
use crate::telemetry::log_throttle::LogThrottle;
use crate::telemetry::metrics;
use crate::wire::problem::{Problem, ProblemKind};
use secrecy::{ExposeSecret, SecretString};

/// Stripe's events are small; this leaves room for any object they carry.
pub const MAX_WEBHOOK_BYTES: usize = 256 * 1024;

/// How far a signature's timestamp may be from now, as Stripe's libraries
/// default: replayed deliveries older than this are refused.
pub const SIGNATURE_TOLERANCE_SECS: i64 = 300;

/// The endpoints' signing secrets.
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// `STRIPE_WEBHOOK_SECRET`: the platform's events.
    pub secret: Option<SecretString>,
    /// `STRIPE_CONNECT_WEBHOOK_SECRET`: the connected accounts' events.
    pub connect_secret: Option<SecretString>,
}

/// An endpoint's secret, named as it is set.
struct Secret<'a> {
    name: &'static str,
    value: Option<&'a SecretString>,
}

/// A Stripe event, verified by its `Stripe-Signature` and recorded once per
/// event id. A redelivery answers 200 and changes nothing. For the events
/// ridepay acts on, the PaymentIntent (or the payment's refunds) is fetched
/// from the gateway and what it says is applied, never the payload. No API
/// key: the signature is the authentication.
#[utoipa::path(
    post,
    path = "/webhooks/stripe",
    tag = "webhooks",
    request_body(content = serde_json::Value, content_type = "application/json", description = "A Stripe event"),
    params(StripeSignatureHeader),
    responses(WebhookAnswers)
)]
pub async fn stripe_webhook(
    request: HttpRequest,
    payload: web::Payload,
    context: web::Data<ServiceContext>,
    settings: web::Data<WebhookSettings>,
) -> Result<HttpResponse, Problem> {
    let secret = Secret {
        name: "STRIPE_WEBHOOK_SECRET",
        value: settings.secret.as_ref(),
    };
    receive(request, payload, context, secret, apply::process).await
}

/// A Connect event about a driver's connected account, verified by its
/// `Stripe-Signature` under the Connect endpoint's own secret and recorded
/// once per event id. `account.updated` and `capability.updated` lead to
/// the account (`account` in the event) fetched from the gateway, whose
/// `transfers` capability sets the driver's status; other types, events of
/// the other mode (live or test) and unknown accounts are acknowledged
/// `ignored`.
#[utoipa::path(
    post,
    path = "/webhooks/stripe/connect",
    tag = "webhooks",
    request_body(content = serde_json::Value, content_type = "application/json", description = "A Stripe Connect event"),
    params(StripeSignatureHeader),
    responses(WebhookAnswers)
)]
pub async fn connect_webhook(
    request: HttpRequest,
    payload: web::Payload,
    context: web::Data<ServiceContext>,
    settings: web::Data<WebhookSettings>,
) -> Result<HttpResponse, Problem> {
    let secret = Secret {
        name: "STRIPE_CONNECT_WEBHOOK_SECRET",
        value: settings.connect_secret.as_ref(),
    };
    receive(request, payload, context, secret, |context, event| {
        connect::process(context, event).map_err(NotYet::Service)
    })
    .await
}

/// An event verified under `secret`, parsed and given to `process`.
async fn receive(
    request: HttpRequest,
    payload: web::Payload,
    context: web::Data<ServiceContext>,
    secret: Secret<'_>,
    process: fn(&ServiceContext, &Event) -> Result<Disposition, NotYet>,
) -> Result<HttpResponse, Problem> {
    // What can be refused without the body is, before it is read.
    let (secret, signature) = signature_header(&request, secret)
        .inspect_err(|_| count("unverified", "invalid_signature"))?;
    let body = read_json(&request, payload, MAX_WEBHOOK_BYTES).await?;
    signature::verify(
        &signature,
        &body,
        secret.expose_secret(),
        chrono::Utc::now().timestamp(),
        SIGNATURE_TOLERANCE_SECS,
    )
    .map_err(|err| {
        count("unverified", "invalid_signature");
        Problem::new(ProblemKind::InvalidSignature, err.to_string())
    })?;
    let event = Event::parse(&body).ok_or_else(|| {
        count("unverified", "invalid_event");
        Problem::new(
            ProblemKind::InvalidRequest,
            "the body is not a Stripe event (id, type, created, data.object)",
        )
    })?;
    let label = event.type_label().to_owned();
    let processed = request_id::block(move || process(&context, &event)).await?;
    match processed {
        Ok(disposition) => {
            count(&label, disposition.as_str());
            Ok(HttpResponse::Ok().json(Received {
                received: true,
                result: disposition.as_str().to_owned(),
            }))
        }
        Err(NotYet::KeyInFlight) => {
            count(&label, "retry");
            Err(Problem::new(
                ProblemKind::ServiceUnavailable,
                "the ride's request is in flight; redeliver the event later",
            )
            .with_retry_after(Duration::from_secs(1)))
        }
        Err(NotYet::Service(err)) => {
            count(&label, "failed");
            Err(err.into())
        }
    }
}

/// The signing secret and the request's `Stripe-Signature`, or the refusal.
fn signature_header(
    request: &HttpRequest,
    secret: Secret<'_>,
) -> Result<(SecretString, String), Problem> {
    let refused = |detail: &str| Problem::new(ProblemKind::InvalidSignature, detail);
    let Some(value) = secret.value else {
        // Anyone can send these, so the line is a warning, and one a minute.
        if MISSING_SECRET_LOG.allows() {
            log::warn!(
                "Stripe webhooks are refused: {} is not set (logged at most once a minute)",
                secret.name
            );
        }
        return Err(refused("this endpoint has no signing secret configured"));
    };
    let header = request
        .headers()
        .get("stripe-signature")
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| refused("the Stripe-Signature header is missing"))?;
    Ok((value.clone(), header.to_owned()))
}

static MISSING_SECRET_LOG: LogThrottle = LogThrottle::per(Duration::from_secs(60));

fn count(event_type: &str, result: &str) {
    metrics::metrics()
        .webhook_events
        .with_label_values(&[event_type, result])
        .inc();
}
