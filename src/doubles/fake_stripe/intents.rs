//! The PaymentIntents API over the doubles' PaymentIntents: create (and
//! confirm), capture, increment_authorization, cancel, retrieve. The JSON is
//! the fake's own, written from Stripe's specification (tests check every
//! answer against it), not the client's types, so that a misreading of
//! Stripe's format cannot hide on both sides.

use diesel::PgConnection;
use serde::Serialize;
use serde_json::{json, Value};

use super::charges::{connection, with_faults, Effect, Form};
use super::http::{Request, Response};
use super::server::{Reply, State};
use super::wire::{self, invalid_request};
use crate::doubles::intents;
use crate::payments::{
    CancelIntent, CaptureIntent, CaptureMethod, CreateIntent, GatewayError, IncrementIntent,
    PaymentIntent,
};

/// A PaymentIntent in Stripe's JSON: every required field of the schema,
/// and the nullable ones ridepay's client reads.
#[derive(Debug, Serialize)]
struct IntentObject {
    id: String,
    object: &'static str,
    amount: i64,
    amount_capturable: i64,
    amount_received: i64,
    capture_method: &'static str,
    cancellation_reason: Option<String>,
    client_secret: Option<String>,
    confirmation_method: &'static str,
    created: i64,
    currency: String,
    latest_charge: Option<String>,
    last_payment_error: Option<Value>,
    livemode: bool,
    metadata: Value,
    next_action: Option<Value>,
    payment_method_types: [&'static str; 1],
    status: &'static str,
}

fn intent_object(intent: &PaymentIntent) -> IntentObject {
    IntentObject {
        id: intent.id.clone(),
        object: "payment_intent",
        amount: intent.amount_cents,
        amount_capturable: intent.amount_capturable_cents,
        amount_received: intent.amount_received_cents,
        capture_method: intent.capture_method.as_str(),
        cancellation_reason: intent.cancellation_reason.clone(),
        client_secret: intent.client_secret.clone(),
        confirmation_method: "automatic",
        created: chrono::Utc::now().timestamp(),
        currency: intent.currency.clone(),
        latest_charge: intent.latest_charge.clone(),
        last_payment_error: intent.last_payment_error.as_ref().map(|error| {
            json!({
                "type": "card_error",
                "code": error.code,
                "decline_code": error.decline_code,
                "message": error.message,
            })
        }),
        livemode: false,
        metadata: json!(intent.metadata),
        next_action: intent.next_action.as_ref().map(|action| {
            json!({
                "type": action.kind,
                "redirect_to_url": { "url": action.url, "return_url": action.return_url },
            })
        }),
        payment_method_types: ["card"],
        status: intent.status.as_str(),
    }
}

/// What the doubles answered, as Stripe answers it: a decline carries the
/// PaymentIntent it left behind.
fn answer(
    conn: &mut PgConnection,
    state: &State,
    result: Result<PaymentIntent, GatewayError>,
) -> Result<Effect, Response> {
    match result {
        Ok(intent) => Ok(Effect {
            answer: Response::json(200, &intent_object(&intent)),
            event: None,
        }),
        Err(GatewayError::Declined {
            code,
            decline_code,
            message,
            payment_intent,
        }) => {
            let intent = payment_intent
                .and_then(|id| intents::retrieve(conn, &id, &state.intents).ok().flatten())
                .map(|intent| intent_object(&intent));
            Err(Response::json(
                402,
                &json!({ "error": {
                    "type": "card_error", "code": code, "decline_code": decline_code,
                    "message": message, "payment_intent": intent,
                }}),
            ))
        }
        Err(GatewayError::Rejected { message }) => {
            let (code, message) = message
                .split_once(": ")
                .unwrap_or(("parameter_invalid", &message));
            Err(invalid_request(400, code, message))
        }
        Err(GatewayError::Misconfigured { reason }) => {
            Err(wire::error(400, "idempotency_error", None, reason))
        }
        Err(other) => Err(wire::api_error(other.to_string())),
    }
}

fn capture_method(form: &Form) -> Result<CaptureMethod, Response> {
    match form.param("capture_method") {
        None => Ok(CaptureMethod::Automatic),
        Some(text) => CaptureMethod::parse(&text).ok_or_else(|| {
            invalid_request(
                400,
                "parameter_invalid",
                format!("Invalid capture_method: {text}"),
            )
        }),
    }
}

/// `POST /v1/payment_intents`, with `confirm=true`.
pub fn create(state: &State, request: &Request) -> Reply {
    let parse = |request: &Request, idempotency_key: String| {
        let form = Form::parse(request)?;
        if form.param("confirm").as_deref() != Some("true") {
            return Err(invalid_request(
                400,
                "parameter_invalid",
                "This fake confirms on creation only: send confirm=true.",
            ));
        }
        Ok(CreateIntent {
            idempotency_key,
            amount_cents: Form::positive_amount(&form.required("amount")?)?,
            currency: form.required("currency")?,
            customer: form.param("customer"),
            payment_method: form.required("payment_method")?,
            capture_method: capture_method(&form)?,
            return_url: form.param("return_url").unwrap_or_default(),
            metadata: form.metadata(),
        })
    };
    with_faults(state, request, parse, |conn, create| {
        let result = intents::create(conn, &create, &state.intents);
        answer(conn, state, result)
    })
}

/// `POST /v1/payment_intents/{id}/{action}`.
pub fn act(state: &State, request: &Request, id: &str, action: &str) -> Reply {
    let id = id.to_owned();
    match action {
        "capture" => with_faults(
            state,
            request,
            |request, idempotency_key| {
                let form = Form::parse(request)?;
                Ok(CaptureIntent {
                    idempotency_key,
                    intent_id: id.clone(),
                    amount_to_capture_cents: Form::positive_amount(
                        &form.required("amount_to_capture")?,
                    )?,
                })
            },
            |conn, capture| {
                let result = intents::capture(conn, &capture, &state.intents);
                answer(conn, state, result)
            },
        ),
        "increment_authorization" => with_faults(
            state,
            request,
            |request, idempotency_key| {
                let form = Form::parse(request)?;
                Ok(IncrementIntent {
                    idempotency_key,
                    intent_id: id.clone(),
                    amount_cents: Form::positive_amount(&form.required("amount")?)?,
                })
            },
            |conn, increment| {
                let result = intents::increment(conn, &increment, &state.intents);
                answer(conn, state, result)
            },
        ),
        "cancel" => with_faults(
            state,
            request,
            |request, idempotency_key| {
                let form = Form::parse(request)?;
                Ok(CancelIntent {
                    idempotency_key,
                    intent_id: id.clone(),
                    cancellation_reason: form
                        .param("cancellation_reason")
                        .unwrap_or_else(|| "requested_by_customer".to_owned()),
                })
            },
            |conn, cancel| {
                let result = intents::cancel(conn, &cancel, &state.intents);
                answer(conn, state, result)
            },
        ),
        _ => Reply::Answer(invalid_request(
            404,
            "resource_missing",
            format!("Unrecognized request URL (POST: /v1/payment_intents/{id}/{action})."),
        )),
    }
}

/// `GET /v1/payment_intents/{id}`.
pub fn retrieve(state: &State, id: &str) -> Response {
    let found = connection(state).and_then(|mut conn| {
        intents::retrieve(&mut conn, id, &state.intents)
            .map_err(|err| wire::api_error(err.to_string()))
    });
    match found {
        Ok(Some(intent)) => Response::json(200, &intent_object(&intent)),
        Ok(None) => invalid_request(
            404,
            "resource_missing",
            format!("No such payment_intent: '{id}'"),
        ),
        Err(refusal) => refusal,
    }
}
