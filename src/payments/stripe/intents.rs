//! PaymentIntents over Stripe's HTTP API: the forms the client sends and the
//! PaymentIntent JSON it reads, every field the specification marks nullable
//! or optional read as such, and fields it does not know ignored (the 2026
//! objects carry many the 2023 specification lacks).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::wire::ListObject;
use ridepay_gateway::{
    metadata_query, CancelIntent, CaptureIntent, CaptureMethod, CreateIntent, GatewayError,
    IncrementIntent, IntentPage, IntentStatus, ListIntents, NextAction, PaymentError,
    PaymentIntent,
};

/// A form body, in Stripe's `a[b]` notation.
pub type Form = Vec<(String, String)>;

pub fn pair(name: &str, value: impl ToString) -> (String, String) {
    (name.to_owned(), value.to_string())
}

/// The charge with its balance transaction: the gateway's fee, once the
/// charge is captured. Expanding it expands the charge too.
pub const BALANCE_TRANSACTION: &str = "latest_charge.balance_transaction";

/// `POST /v1/payment_intents`: created and confirmed at once. A hold asks
/// for incremental authorization where the card offers it (a parameter newer
/// than the vendored specification).
pub fn create_form(request: &CreateIntent) -> Form {
    let mut form = vec![
        pair("amount", request.amount_cents),
        pair("currency", &request.currency),
        pair("confirm", "true"),
        pair("capture_method", request.capture_method.as_str()),
        pair("payment_method", &request.payment_method),
        pair("return_url", &request.return_url),
    ];
    form.extend(
        request
            .customer
            .iter()
            .map(|customer| pair("customer", customer)),
    );
    if request.off_session {
        form.push(pair("off_session", "true"));
    }
    form.extend(
        request
            .transfer_group
            .iter()
            .map(|group| pair("transfer_group", group)),
    );
    let held = request.capture_method == CaptureMethod::Manual;
    let hold = request.hold;
    if held {
        for (asked, feature) in [
            (hold.incremental, "request_incremental_authorization"),
            (hold.overcapture, "request_overcapture"),
            (hold.extended, "request_extended_authorization"),
        ] {
            if asked {
                form.push(pair(
                    &format!("payment_method_options[card][{feature}]"),
                    "if_available",
                ));
            }
        }
    }
    // The charge says what the card allowed a hold, and the balance
    // transaction what a capture cost: read them with the answer.
    if request.expand_balance_transaction {
        form.push(pair("expand[]", BALANCE_TRANSACTION));
    } else if held && !hold.is_increments_only() {
        form.push(pair("expand[]", "latest_charge"));
    }
    form.extend(metadata_fields(&request.metadata));
    form
}

/// `POST /v1/payment_intents/{id}/capture`.
pub fn capture_form(request: &CaptureIntent) -> Form {
    let mut form = vec![pair("amount_to_capture", request.amount_to_capture_cents)];
    if request.expand_balance_transaction {
        form.push(pair("expand[]", BALANCE_TRANSACTION));
    }
    form
}

/// `POST /v1/payment_intents/{id}/increment_authorization`: the new total.
pub fn increment_form(request: &IncrementIntent) -> Form {
    vec![pair("amount", request.amount_cents)]
}

/// `POST /v1/payment_intents/{id}/cancel`.
pub fn cancel_form(request: &CancelIntent) -> Form {
    vec![pair("cancellation_reason", &request.cancellation_reason)]
}

/// The parameters newer than the vendored specification the client sends,
/// each named so the conformance check can allow exactly these.
pub const NEWER_PARAMETERS: &[&str] = &[
    "payment_method_options[card][request_incremental_authorization]",
    "payment_method_options[card][request_overcapture]",
    "payment_method_options[card][request_extended_authorization]",
];

/// A PaymentIntent as the specification describes it, as far as ridepay
/// reads it.
#[derive(Debug, Deserialize)]
struct IntentObject {
    id: String,
    created: i64,
    status: String,
    amount: i64,
    #[serde(default)]
    amount_capturable: i64,
    #[serde(default)]
    amount_received: i64,
    currency: String,
    capture_method: String,
    client_secret: Option<String>,
    next_action: Option<NextActionObject>,
    /// An id, or the charge itself when expanded.
    latest_charge: Option<Value>,
    last_payment_error: Option<ErrorObject>,
    cancellation_reason: Option<String>,
    #[serde(default, deserialize_with = "super::wire::null_as_empty")]
    metadata: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct NextActionObject {
    #[serde(rename = "type")]
    kind: String,
    redirect_to_url: Option<RedirectObject>,
}

#[derive(Debug, Deserialize)]
struct RedirectObject {
    url: Option<String>,
    return_url: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ErrorObject {
    code: Option<String>,
    decline_code: Option<String>,
    message: Option<String>,
}

/// Reads a PaymentIntent. A body that says something else is no answer
/// ridepay can act on: outcome unknown, for a retry under the same key.
pub fn payment_intent(body: &[u8]) -> Result<PaymentIntent, GatewayError> {
    let unreadable = |why: String| GatewayError::OutcomeUnknown {
        reason: format!("unreadable PaymentIntent from Stripe: {why}"),
    };
    let object: IntentObject =
        serde_json::from_slice(body).map_err(|err| unreadable(err.to_string()))?;
    intent_of(object)
}

/// A POST's PaymentIntent, and whether Stripe answered it from what it
/// saved under the key (`Idempotent-Replayed: true`).
pub fn answered_intent(body: &[u8], replayed: bool) -> Result<PaymentIntent, GatewayError> {
    Ok(PaymentIntent {
        replayed,
        ..payment_intent(body)?
    })
}

/// What ridepay reads of a PaymentIntent object.
fn intent_of(object: IntentObject) -> Result<PaymentIntent, GatewayError> {
    let unreadable = |why: String| GatewayError::OutcomeUnknown {
        reason: format!("unreadable PaymentIntent from Stripe: {why}"),
    };
    let status = IntentStatus::parse(&object.status)
        .ok_or_else(|| unreadable(format!("status {:?}", object.status)))?;
    let capture_method = match object.capture_method.as_str() {
        // `automatic_async` captures at once too, only later in the
        // background.
        "automatic_async" => CaptureMethod::Automatic,
        other => CaptureMethod::parse(other)
            .ok_or_else(|| unreadable(format!("capture_method {other:?}")))?,
    };
    // With `expand[]=latest_charge`, the charge comes whole and says
    // whether it is disputed and what the card allows a hold; otherwise
    // only its id. Its balance transaction comes whole only when that was
    // expanded too, and once the charge is captured.
    let (latest_charge, charge) = match object.latest_charge {
        Some(Value::String(id)) => (Some(id), Value::Null),
        Some(charge @ Value::Object(_)) => (
            charge.get("id").and_then(Value::as_str).map(str::to_owned),
            charge,
        ),
        _ => (None, Value::Null),
    };
    let balance_transaction = super::balance_transactions::of_charge(&charge)
        .map_err(|why| unreadable(format!("balance transaction: {why}")))?;
    let disputed = charge["disputed"].as_bool() == Some(true);
    let card = &charge["payment_method_details"]["card"];
    let held = status == IntentStatus::RequiresCapture;
    let amount_capturable_max_cents = (card["overcapture"]["status"] == "available" && held)
        .then(|| card["overcapture"]["maximum_amount_capturable"].as_i64())
        .flatten();
    let capture_before = card["capture_before"]
        .as_i64()
        .filter(|_| held)
        .and_then(|at| chrono::DateTime::from_timestamp(at, 0));
    let created = chrono::DateTime::from_timestamp(object.created, 0)
        .ok_or_else(|| unreadable(format!("created {}", object.created)))?;
    Ok(PaymentIntent {
        id: object.id,
        created,
        status,
        amount_cents: object.amount,
        amount_capturable_cents: object.amount_capturable,
        amount_received_cents: object.amount_received,
        currency: object.currency,
        capture_method,
        client_secret: object.client_secret,
        next_action: object.next_action.map(|action| NextAction {
            url: action.redirect_to_url.as_ref().and_then(|r| r.url.clone()),
            return_url: action.redirect_to_url.and_then(|r| r.return_url),
            kind: action.kind,
        }),
        latest_charge,
        last_payment_error: object.last_payment_error.map(|error| PaymentError {
            code: error.code,
            decline_code: error.decline_code,
            message: error.message,
        }),
        cancellation_reason: object.cancellation_reason,
        disputed,
        metadata: object.metadata,
        amount_capturable_max_cents,
        capture_before,
        balance_transaction,
        replayed: false,
    })
}

/// The query of `GET /v1/payment_intents`: `created[gte]` in whole
/// seconds (rounded down, so nothing created in the second is missed).
pub fn list_query(request: &ListIntents) -> Vec<(&'static str, String)> {
    let mut query = vec![
        ("created[gte]", request.created_gte.timestamp().to_string()),
        ("limit", request.limit.to_string()),
    ];
    query.extend(request.customer.iter().map(|c| ("customer", c.clone())));
    query.extend(
        request
            .starting_after
            .iter()
            .map(|id| ("starting_after", id.clone())),
    );
    query
}

/// The query of `GET /v1/payment_intents/search` for intents whose
/// metadata has every pair, a full page.
pub fn search_query(metadata: &[(&str, &str)]) -> Vec<(&'static str, String)> {
    vec![
        ("query", metadata_query(metadata)),
        ("limit", ListIntents::MAX_LIMIT.to_string()),
    ]
}

/// A page of PaymentIntents: a list (`"object": "list"`) or a search
/// result (`"object": "search_result"`), read alike.
pub fn intent_page(body: &[u8]) -> Result<IntentPage, GatewayError> {
    let page: ListObject<IntentObject> = serde_json::from_slice(body)
        .map_err(|err| super::outcome::unreadable("PaymentIntent list", err))?;
    let intents = page
        .data
        .into_iter()
        .map(intent_of)
        .collect::<Result<_, _>>()?;
    Ok(IntentPage {
        intents,
        has_more: page.has_more,
    })
}

/// `metadata[name]=value` fields.
pub(super) fn metadata_fields(
    metadata: &[(String, String)],
) -> impl Iterator<Item = (String, String)> + '_ {
    metadata
        .iter()
        .map(|(key, value)| (format!("metadata[{key}]"), value.clone()))
}
