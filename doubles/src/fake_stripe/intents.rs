//! The PaymentIntents API over the doubles' PaymentIntents: create (and
//! confirm), capture, increment_authorization, cancel, retrieve.

use diesel::PgConnection;
use serde_json::json;

use super::calls::{connection, with_faults, Form};
use super::http::{Request, Response};
use super::state::{Reply, State};
use super::wire::{self, intent_object, invalid_request, ExpandedCharge};
use crate::{intents, refunds};
use ridepay_gateway::{
    parse_metadata_query, CancelIntent, CaptureIntent, CaptureMethod, CreateIntent, GatewayError,
    HoldRequest, IncrementIntent, ListIntents, Payment, PaymentIntent,
};

/// What the doubles answered, as Stripe answers it: a decline carries the
/// PaymentIntent it left behind.
fn answer(
    conn: &mut PgConnection,
    state: &State,
    result: Result<PaymentIntent, GatewayError>,
) -> Result<Response, Response> {
    answer_expanded(conn, state, result, None)
}

/// `answer`, its charge shown as `expanded` says.
fn answer_expanded(
    conn: &mut PgConnection,
    state: &State,
    result: Result<PaymentIntent, GatewayError>,
    expanded: Option<ExpandedCharge>,
) -> Result<Response, Response> {
    let object = |intent: &PaymentIntent| intent_object(intent, expanded);
    match result {
        Ok(intent) if intent.replayed => {
            Ok(Response::json(200, &object(&intent)).with_header("Idempotent-Replayed", "true"))
        }
        Ok(intent) => Ok(Response::json(200, &object(&intent))),
        Err(GatewayError::Declined {
            code,
            decline_code,
            message,
            payment_intent,
        }) => {
            let intent = payment_intent
                .and_then(|id| intents::retrieve(conn, &id, &state.intents).ok().flatten())
                .map(|intent| intent_object(&intent, None));
            Err(Response::json(
                402,
                &json!({ "error": {
                    "type": "card_error", "code": code, "decline_code": decline_code,
                    "message": message, "payment_intent": intent,
                }}),
            ))
        }
        Err(other) => Err(wire::refusal(other)),
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

/// `POST /v1/payment_intents`, with `confirm=true`; its charge expanded
/// when asked (nothing refunded yet).
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
        let create = CreateIntent {
            idempotency_key,
            amount_cents: Form::positive_amount(&form.required("amount")?)?,
            currency: form.required("currency")?,
            customer: form.param("customer"),
            payment_method: form.required("payment_method")?,
            capture_method: capture_method(&form)?,
            return_url: form.param("return_url").unwrap_or_default(),
            metadata: form.metadata(),
            hold: hold_request(&form),
            off_session: form.param("off_session").as_deref() == Some("true"),
            transfer_group: form.param("transfer_group"),
            expand_balance_transaction: form.expands_balance_transaction(),
        };
        Ok((create, form.expanded_charge(0)))
    };
    with_faults(state, request, parse, |conn, (create, expanded)| {
        let result = intents::create(conn, &create, &state.intents);
        answer_expanded(conn, state, result, expanded)
    })
}

/// What a hold asks of the card (`payment_method_options[card][request_*]
/// = if_available`); a payment captured at once asks nothing, and is kept
/// as holds were before the other features.
fn hold_request(form: &Form) -> HoldRequest {
    if form.param("capture_method").as_deref() != Some("manual") {
        return HoldRequest::INCREMENTS_ONLY;
    }
    let asks = |feature: &str| {
        form.param(&format!("payment_method_options[card][request_{feature}]"))
            .as_deref()
            == Some("if_available")
    };
    HoldRequest {
        incremental: asks("incremental_authorization"),
        overcapture: asks("overcapture"),
        extended: asks("extended_authorization"),
    }
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
                let capture = CaptureIntent {
                    idempotency_key,
                    intent_id: id.clone(),
                    amount_to_capture_cents: Form::positive_amount(
                        &form.required("amount_to_capture")?,
                    )?,
                    expand_balance_transaction: form.expands_balance_transaction(),
                };
                Ok((capture, form.expanded_charge(0)))
            },
            |conn, (capture, expanded)| {
                let result = intents::capture(conn, &capture, &state.intents);
                answer_expanded(conn, state, result, expanded)
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

/// `GET /v1/payment_intents/{id}`, its charge expanded when asked.
pub fn retrieve(state: &State, id: &str, query: &str) -> Response {
    let expand = Form::from_query(query)
        .ok()
        .filter(Form::expands_latest_charge);
    let found = connection(state).and_then(|mut conn| {
        let intent = intents::retrieve(&mut conn, id, &state.intents).map_err(wire::refusal)?;
        let expanded = match (&intent, &expand) {
            (Some(intent), Some(form)) => {
                let payment = Payment::Intent(intent.id.clone());
                let made = refunds::refunds_of(&mut conn, &payment).map_err(wire::refusal)?;
                form.expanded_charge(wire::refunded(&made))
            }
            _ => None,
        };
        Ok(intent.map(|intent| (intent, expanded)))
    });
    match found {
        Ok(Some((intent, expanded))) => Response::json(200, &intent_object(&intent, expanded)),
        Ok(None) => invalid_request(
            404,
            "resource_missing",
            format!("No such payment_intent: '{id}'"),
        ),
        Err(refusal) => refusal,
    }
}

/// `GET /v1/payment_intents`: `created[gte]`, `customer`, `starting_after`
/// and `limit`, newest first.
pub fn list(state: &State, request: &Request) -> Response {
    let listed = Form::from_query(&request.query).and_then(|query| {
        let list = ListIntents {
            created_gte: query.created_gte()?.unwrap_or(chrono::DateTime::UNIX_EPOCH),
            customer: query.param("customer"),
            starting_after: query.param("starting_after"),
            limit: query.limit()?,
        };
        let mut conn = connection(state)?;
        intents::list(&mut conn, &list, &state.intents).map_err(wire::refusal)
    });
    match listed {
        Ok(page) => Response::json(200, &wire::intent_page(&page, false)),
        Err(refusal) => refusal,
    }
}

/// `GET /v1/payment_intents/search`: `metadata['k']:'v'` clauses joined by
/// `AND`, the only query this fake understands; a new intent is found only
/// after the search lag.
pub fn search(state: &State, request: &Request) -> Response {
    let found = Form::from_query(&request.query).and_then(|query| {
        let text = query.required("query")?;
        let pairs = parse_metadata_query(&text).ok_or_else(|| {
            invalid_request(
                400,
                "parameter_invalid",
                "This fake searches by metadata['key']:'value' clauses joined by AND only.",
            )
        })?;
        let pairs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let lag = state.config.faults.search_lag;
        let mut conn = connection(state)?;
        intents::search(&mut conn, &pairs, lag, &state.intents).map_err(wire::refusal)
    });
    match found {
        Ok(page) => Response::json(200, &wire::intent_page(&page, true)),
        Err(refusal) => refusal,
    }
}
