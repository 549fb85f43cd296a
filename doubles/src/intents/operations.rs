//! The PaymentIntent calls: create and confirm, capture, raise, cancel,
//! retrieve, each once per key.

use std::collections::BTreeMap;

use diesel::prelude::*;
use serde::Serialize;
use serde_json::json;

use super::cards::{behaviour, decline_of, hold_features, Behaviour};
use super::changes::{read_and_change, ATTEMPTS};
use super::clock::{expiry, from_now, whole_seconds, PROCESSING_SETTLES_AFTER};
use super::errors::{contended, declined, no_such_intent, storage, unexpected_state};
use super::kept_calls::{to_keep, Call};
use super::one_statement;
use super::settings::IntentSettings;
use super::stored::{random_id, read, read_for_call, StoredIntent};
use crate::balance_transactions::with_balance_transaction;
use crate::return_url::valid_return_url;
use ridepay_gateway::{
    CancelIntent, CaptureIntent, CaptureMethod, CreateIntent, GatewayError, IncrementIntent,
    IntentStatus, PaymentIntent, NO_SUCH_PAYMENT_METHOD,
};

/// The intent a create makes, as its test payment method says; `None` for a
/// payment method there is no such thing as.
fn new_intent(request: &CreateIntent, settings: &IntentSettings) -> Option<StoredIntent> {
    let behaviour = behaviour(&request.payment_method);
    let held = request.capture_method == CaptureMethod::Manual;
    let decline = decline_of(behaviour, request.off_session);
    let (status, capturable, received) = match behaviour {
        Behaviour::Unknown => return None,
        _ if decline.is_some() => (IntentStatus::RequiresPaymentMethod, 0, 0),
        Behaviour::NeedsAuthentication => (IntentStatus::RequiresAction, 0, 0),
        Behaviour::Processing => (IntentStatus::Processing, 0, 0),
        _ if held => (IntentStatus::RequiresCapture, request.amount_cents, 0),
        _ => (IntentStatus::Succeeded, 0, request.amount_cents),
    };
    let features = hold_features(&request.payment_method);
    let extended = held && request.hold.extended && features.extended;
    let metadata: BTreeMap<&str, &str> = request
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let id = random_id("pi_sim_");
    Some(StoredIntent {
        client_secret: format!("{id}_secret_{}", random_id("")),
        id,
        amount_cents: request.amount_cents,
        amount_capturable_cents: capturable,
        amount_received_cents: received,
        currency: request.currency.clone(),
        capture_method: request.capture_method,
        return_url: Some(request.return_url.clone()),
        status,
        // A hold has its charge too, uncaptured: what reports the card's
        // features.
        latest_charge: matches!(
            status,
            IntentStatus::Succeeded | IntentStatus::RequiresCapture
        )
        .then(|| random_id("ch_sim_")),
        last_error_code: decline.map(|decline| decline.code.to_owned()),
        last_error_decline_code: decline.map(|decline| decline.decline_code.to_owned()),
        last_error_message: decline.map(|decline| decline.message.to_owned()),
        cancellation_reason: None,
        payment_method: request.payment_method.clone(),
        increments: 0,
        authorization_expires_at: (status == IntentStatus::RequiresCapture)
            .then(|| expiry(settings, extended)),
        settles_at: (status == IntentStatus::Processing)
            .then(|| from_now(PROCESSING_SETTLES_AFTER)),
        metadata: json!(metadata),
        gateway: settings.double,
        disputed: false,
        // Whole seconds, as Stripe's `created`: the answer and every later
        // read agree.
        created_at: whole_seconds(chrono::Utc::now()),
        overcapture_max_cents: (status == IntentStatus::RequiresCapture)
            .then(|| features.overcapture_max(request.hold.overcapture, request.amount_cents))
            .flatten(),
    })
}

/// Creates and confirms a PaymentIntent.
pub fn create(
    conn: &mut PgConnection,
    request: &CreateIntent,
    settings: &IntentSettings,
) -> Result<PaymentIntent, GatewayError> {
    // Refused before it runs, as Stripe refuses a parameter: nothing kept.
    if !request.return_url.is_empty() && valid_return_url(&request.return_url).is_none() {
        return Err(GatewayError::Rejected {
            message: "url_invalid: Invalid URL: return_url must be an http or https URL \
                      without control characters"
                .to_owned(),
        });
    }
    let call = Call::new("create", &request.idempotency_key, request);
    let Some(made) = new_intent(request, settings) else {
        let unknown = Err(GatewayError::Rejected {
            message: format!(
                "resource_missing: {NO_SUCH_PAYMENT_METHOD}: '{}'",
                request.payment_method
            ),
        });
        return call.answer_once(conn, unknown, |conn, answer| call.keep(conn, answer));
    };
    let answer = with_balance_transaction(
        made.intent(settings),
        &made.payment_method,
        request.expand_balance_transaction,
    );
    let result = match answer {
        PaymentIntent {
            last_payment_error: Some(error),
            id,
            ..
        } => Err(GatewayError::Declined {
            code: error.code.unwrap_or_default(),
            decline_code: error.decline_code,
            message: error.message.unwrap_or_default(),
            payment_intent: Some(id),
        }),
        intent => Ok(intent),
    };
    call.answer_once(conn, result, |conn, answer| {
        let asked = one_statement::Asked {
            customer: request.customer.as_deref(),
            transfer_group: request.transfer_group.as_deref(),
        };
        one_statement::create(conn, &made, asked, &call, answer)
    })
}

/// A call on an existing PaymentIntent: its name and its key, as kept in
/// `simulated_intent_calls`, and whether its answer brings the charge's
/// balance transaction.
trait IntentCall: Serialize {
    const OPERATION: &'static str;
    fn key(&self) -> &str;
    fn intent_id(&self) -> &str;
    fn expands_balance_transaction(&self) -> bool {
        false
    }
}

macro_rules! intent_call {
    ($request:ty, $operation:literal $(, $expands:ident)?) => {
        impl IntentCall for $request {
            const OPERATION: &'static str = $operation;
            fn key(&self) -> &str {
                &self.idempotency_key
            }
            fn intent_id(&self) -> &str {
                &self.intent_id
            }
            $(
                fn expands_balance_transaction(&self) -> bool {
                    self.$expands
                }
            )?
        }
    };
}

intent_call!(CaptureIntent, "capture", expand_balance_transaction);
intent_call!(IncrementIntent, "increment_authorization");
intent_call!(CancelIntent, "cancel");

/// A call on an existing PaymentIntent, once per key: `change` judges the
/// intent as the clock has it now (a lapsed hold canceled) and says what it
/// becomes, or refuses. One read, of the intent and any answer kept, and
/// one write guarded by the version read: a concurrent change, or a
/// concurrent answer under the key, makes it read again.
fn on_intent<R: IntentCall>(
    conn: &mut PgConnection,
    request: &R,
    settings: &IntentSettings,
    change: impl Fn(&StoredIntent) -> Result<StoredIntent, GatewayError>,
) -> Result<PaymentIntent, GatewayError> {
    let call = Call::new(R::OPERATION, request.key(), request);
    let id = request.intent_id();
    for _ in 0..ATTEMPTS {
        let Some((found, kept)) = read_for_call(conn, id, call.key).map_err(storage)? else {
            let missing = Err(no_such_intent(id));
            return call.answer_once(conn, missing, |conn, answer| call.keep(conn, answer));
        };
        if let Some(kept) = kept {
            return call.replay(kept);
        }
        let mut now = found.on_the_clock();
        let result = change(&now.intent).map(|changed| {
            now.becomes(changed);
            with_balance_transaction(
                now.intent.intent(settings),
                &now.intent.payment_method,
                request.expands_balance_transaction(),
            )
        });
        let Some(answer) = to_keep(&result) else {
            return result;
        };
        if now.write(conn, Some((&call, &answer))).map_err(storage)? {
            return result;
        }
    }
    Err(contended(id))
}

/// Captures `amount_to_capture` of a hold; the rest is released.
pub fn capture(
    conn: &mut PgConnection,
    request: &CaptureIntent,
    settings: &IntentSettings,
) -> Result<PaymentIntent, GatewayError> {
    on_intent(conn, request, settings, |intent| {
        if intent.status != IntentStatus::RequiresCapture {
            return Err(unexpected_state(intent.status, "capture"));
        }
        // Overcapture: up to what the card allows over the hold.
        let most = intent
            .overcapture_max_cents
            .unwrap_or(intent.amount_capturable_cents);
        if !(1..=most).contains(&request.amount_to_capture_cents) {
            return Err(GatewayError::Rejected {
                message: format!("amount_too_large: amount_to_capture must be at most {most}"),
            });
        }
        Ok(StoredIntent {
            status: IntentStatus::Succeeded,
            amount_received_cents: request.amount_to_capture_cents,
            amount_capturable_cents: 0,
            latest_charge: intent
                .latest_charge
                .clone()
                .or_else(|| Some(random_id("ch_sim_"))),
            ..intent.clone()
        })
    })
}

/// Raises a hold to a new total.
pub fn increment(
    conn: &mut PgConnection,
    request: &IncrementIntent,
    settings: &IntentSettings,
) -> Result<PaymentIntent, GatewayError> {
    on_intent(conn, request, settings, |intent| {
        if intent.status != IntentStatus::RequiresCapture {
            return Err(unexpected_state(
                intent.status,
                "increment the authorization of",
            ));
        }
        if request.amount_cents <= intent.amount_cents || intent.increments >= 10 {
            return Err(GatewayError::Rejected {
                message: format!(
                    "amount must be more than the {} authorized, at most ten times",
                    intent.amount_cents
                ),
            });
        }
        if behaviour(&intent.payment_method) == Behaviour::RefusesIncrements {
            return Err(declined("generic_decline", &intent.id));
        }
        // Overcapture room grows with the hold.
        let overcapture = hold_features(&intent.payment_method);
        Ok(StoredIntent {
            amount_cents: request.amount_cents,
            amount_capturable_cents: request.amount_cents,
            increments: intent.increments + 1,
            overcapture_max_cents: intent
                .overcapture_max_cents
                .and_then(|_| overcapture.overcapture_max(true, request.amount_cents)),
            ..intent.clone()
        })
    })
}

/// Cancels a PaymentIntent that is not yet paid, releasing any hold.
pub fn cancel(
    conn: &mut PgConnection,
    request: &CancelIntent,
    settings: &IntentSettings,
) -> Result<PaymentIntent, GatewayError> {
    on_intent(conn, request, settings, |intent| {
        if matches!(
            intent.status,
            IntentStatus::Succeeded | IntentStatus::Canceled
        ) {
            return Err(unexpected_state(intent.status, "cancel"));
        }
        Ok(StoredIntent {
            status: IntentStatus::Canceled,
            cancellation_reason: Some(request.cancellation_reason.clone()),
            amount_capturable_cents: 0,
            ..intent.clone()
        })
    })
}

/// The PaymentIntent now, a lapsed hold canceled first, with its charge's
/// balance transaction once captured.
pub fn retrieve(
    conn: &mut PgConnection,
    id: &str,
    settings: &IntentSettings,
) -> Result<Option<PaymentIntent>, GatewayError> {
    Ok(read_and_change(conn, id, read, |_| ())?.map(|intent| {
        with_balance_transaction(intent.intent(settings), &intent.payment_method, true)
    }))
}
