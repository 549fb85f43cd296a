//! The fake's JSON: Stripe's objects and errors written from Stripe's
//! specification (tests check every answer against it), not with the
//! client's types, so that a misreading of Stripe's format cannot hide on
//! both sides.

use serde::Serialize;
use serde_json::{json, Value};

use super::http::Response;
use crate::balance_transactions;
use ridepay_gateway::{
    Account, AccountLink, AccountPage, Balance, BalanceAmount, BalanceTransactionPage,
    CapabilityStatus, GatewayError, IntentPage, IntentStatus, ListedBalanceTransaction,
    PaymentIntent, Refund, Transfer, TransferPage, TransferReversal, TransferReversalPage,
};

/// A PaymentIntent: every required field of the schema, and the nullable
/// ones ridepay's client reads.
#[derive(Debug, Serialize)]
pub struct IntentObject {
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
    /// An id, or with `expand[]=latest_charge` (or
    /// `latest_charge.balance_transaction`) the charge itself.
    latest_charge: Option<Value>,
    last_payment_error: Option<Value>,
    livemode: bool,
    metadata: Value,
    next_action: Option<Value>,
    payment_method_types: [&'static str; 1],
    status: &'static str,
}

/// A charge shown whole in its PaymentIntent (`expand[]=latest_charge`):
/// what its refunds gave back, and whether its balance transaction is shown
/// whole too (`expand[]=latest_charge.balance_transaction`) or by its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpandedCharge {
    pub refunded: i64,
    pub balance_transaction: bool,
}

/// The intent, its charge's id or (`expanded`) the charge itself.
pub fn intent_object(intent: &PaymentIntent, expanded: Option<ExpandedCharge>) -> IntentObject {
    let latest_charge = intent.latest_charge.as_ref().map(|id| match expanded {
        Some(expanded) => charge_object(id, intent, expanded),
        None => json!(id),
    });
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
        created: intent.created.timestamp(),
        currency: intent.currency.clone(),
        latest_charge,
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

/// The charge of a PaymentIntent that took money, as `expand[]` shows it
/// and `charge.refunded` carries it: its balance transaction null until
/// it is captured.
pub fn charge_object(id: &str, intent: &PaymentIntent, expanded: ExpandedCharge) -> Value {
    let captured = intent.amount_received_cents > 0;
    let refunded = expanded.refunded;
    // A call that asks for the balance transaction has it on the intent.
    let balance_transaction = match &intent.balance_transaction {
        Some(transaction) if expanded.balance_transaction => {
            balance_transaction_object(&ListedBalanceTransaction {
                kind: "charge".to_owned(),
                source: Some(id.to_owned()),
                created: intent.created,
                transaction: transaction.clone(),
            })
        }
        _ if captured && intent.status == IntentStatus::Succeeded => {
            json!(balance_transactions::charge_transaction_id(id))
        }
        _ => Value::Null,
    };
    json!({
        "id": id,
        "object": "charge",
        "amount": intent.amount_cents,
        "amount_captured": intent.amount_received_cents,
        "amount_refunded": refunded,
        "balance_transaction": balance_transaction,
        "billing_details": { "address": null, "email": null, "name": null, "phone": null },
        "captured": captured,
        "created": chrono::Utc::now().timestamp(),
        "currency": intent.currency,
        "disputed": intent.disputed,
        "livemode": false,
        "metadata": intent.metadata,
        "paid": true,
        "payment_intent": intent.id,
        "payment_method_details": { "type": "card", "card": card_details(intent) },
        "refunded": captured && refunded == intent.amount_received_cents,
        "status": "succeeded",
    })
}

/// A balance transaction: what it moved into or out of the balance, and
/// Stripe's fee on it, detailed.
fn balance_transaction_object(listed: &ListedBalanceTransaction) -> Value {
    let transaction = &listed.transaction;
    let fee_details: Vec<Value> = (transaction.fee_cents != 0)
        .then(|| {
            json!({
                "amount": transaction.fee_cents,
                "application": null,
                "currency": transaction.currency,
                "description": "Stripe processing fees",
                "type": "stripe_fee",
            })
        })
        .into_iter()
        .collect();
    let created = listed.created.timestamp();
    json!({
        "id": transaction.id,
        "object": "balance_transaction",
        "amount": transaction.amount_cents,
        "available_on": created,
        "created": created,
        "currency": transaction.currency,
        "description": null,
        "exchange_rate": transaction.exchange_rate,
        "fee": transaction.fee_cents,
        "fee_details": fee_details,
        "net": transaction.net_cents,
        "reporting_category": listed.kind,
        "source": listed.source,
        "status": "available",
        "type": listed.kind,
    })
}

/// A page of balance transactions, as `GET /v1/balance_transactions`
/// answers.
pub fn balance_transaction_list(page: &BalanceTransactionPage) -> Value {
    json!({
        "object": "list",
        "data": page.transactions.iter().map(balance_transaction_object).collect::<Vec<_>>(),
        "has_more": page.has_more,
        "url": "/v1/balance_transactions",
    })
}

/// The card's part of a charge: what it allows a hold beyond the fare
/// (fields newer than the vendored specification, as Stripe's 2026 charges
/// carry them).
fn card_details(intent: &PaymentIntent) -> Value {
    let held = intent.capture_before.is_some();
    let extended = intent
        .capture_before
        .is_some_and(|before| before - intent.created > chrono::Duration::days(8));
    json!({
        "brand": "visa",
        "exp_month": 12,
        "exp_year": 2034,
        "last4": "4242",
        "capture_before": intent.capture_before.map(|before| before.timestamp()),
        "overcapture": {
            "maximum_amount_capturable": intent
                .amount_capturable_max_cents
                .unwrap_or(intent.amount_capturable_cents),
            "status": if intent.amount_capturable_max_cents.is_some() { "available" } else { "unavailable" },
        },
        "extended_authorization": { "status": if extended { "enabled" } else { "disabled" } },
        "incremental_authorization": { "status": if held { "available" } else { "unavailable" } },
    })
}

pub fn refund_object(refund: &Refund) -> Value {
    json!({
        "id": refund.id,
        "object": "refund",
        "amount": refund.amount_cents,
        "charge": refund.charge,
        "created": chrono::Utc::now().timestamp(),
        "currency": refund.currency,
        "metadata": refund.metadata,
        "payment_intent": refund.payment_intent,
        "reason": refund.reason,
        "status": refund.status.as_str(),
    })
}

/// A connected account: what ridepay reads of it, and what an Express
/// account always shows (its type, its capabilities, whether it may take
/// payments and be paid out).
pub fn account_object(account: &Account) -> Value {
    let transfers = account.transfers.map(CapabilityStatus::as_str);
    json!({
        "id": account.id,
        "object": "account",
        "type": "express",
        "capabilities": { "transfers": transfers },
        "charges_enabled": false,
        "country": account.country,
        "created": account.created.timestamp(),
        "details_submitted": account.details_submitted,
        "email": account.email,
        "metadata": account.metadata,
        "payouts_enabled": account.can_be_paid(),
    })
}

/// An onboarding link.
pub fn account_link_object(link: &AccountLink) -> Value {
    json!({
        "object": "account_link",
        "created": chrono::Utc::now().timestamp(),
        "expires_at": link.expires_at.timestamp(),
        "url": link.url,
    })
}

/// A transfer from a source charge: its reversals shown whole, as Stripe
/// shows them (its `balance_transaction` and `destination_payment`, which
/// ridepay never reads, are not kept).
pub fn transfer_object(transfer: &Transfer) -> Value {
    json!({
        "id": transfer.id,
        "object": "transfer",
        "amount": transfer.amount_cents,
        "amount_reversed": transfer.amount_reversed_cents,
        "balance_transaction": null,
        "created": transfer.created.timestamp(),
        "currency": transfer.currency,
        "description": null,
        "destination": transfer.destination,
        "livemode": false,
        "metadata": transfer.metadata,
        "reversals": reversal_list(&transfer.id, &transfer.reversals, false),
        "reversed": transfer.reversed,
        "source_transaction": transfer.source_transaction,
        "source_type": "card",
        "transfer_group": transfer.transfer_group,
    })
}

pub fn transfer_reversal_object(reversal: &TransferReversal) -> Value {
    json!({
        "id": reversal.id,
        "object": "transfer_reversal",
        "amount": reversal.amount_cents,
        "balance_transaction": null,
        "created": reversal.created.timestamp(),
        "currency": reversal.currency,
        "destination_payment_refund": null,
        "metadata": reversal.metadata,
        "source_refund": null,
        "transfer": reversal.transfer,
    })
}

/// A transfer's reversals, as `GET /v1/transfers/{id}/reversals` answers
/// them and a transfer shows them.
fn reversal_list(transfer: &str, reversals: &[TransferReversal], has_more: bool) -> Value {
    json!({
        "object": "list",
        "data": reversals.iter().map(transfer_reversal_object).collect::<Vec<_>>(),
        "has_more": has_more,
        "url": format!("/v1/transfers/{transfer}/reversals"),
    })
}

pub fn transfer_reversal_list(transfer: &str, page: &TransferReversalPage) -> Value {
    reversal_list(transfer, &page.reversals, page.has_more)
}

pub fn account_list(page: &AccountPage) -> Value {
    json!({
        "object": "list",
        "data": page.accounts.iter().map(account_object).collect::<Vec<_>>(),
        "has_more": page.has_more,
        "url": "/v1/accounts",
    })
}

/// A page of transfers, as `GET /v1/transfers` answers.
pub fn transfer_list(page: &TransferPage) -> Value {
    json!({
        "object": "list",
        "data": page.transfers.iter().map(transfer_object).collect::<Vec<_>>(),
        "has_more": page.has_more,
        "url": "/v1/transfers",
    })
}

/// A connected account's balance, all of it from cards.
pub fn balance_object(balance: &Balance) -> Value {
    let amounts = |amounts: &[BalanceAmount]| -> Vec<Value> {
        amounts
            .iter()
            .map(|amount| {
                json!({
                    "amount": amount.amount_cents,
                    "currency": amount.currency,
                    "source_types": { "card": amount.amount_cents },
                })
            })
            .collect()
    };
    json!({
        "object": "balance",
        "available": amounts(&balance.available),
        "livemode": false,
        "pending": amounts(&balance.pending),
    })
}

/// A charge made through the Charges API, as `charge.refunded` carries it.
pub fn legacy_charge_object(id: &str, refund: &Refund) -> Value {
    json!({
        "id": id,
        "object": "charge",
        "amount": refund.amount_cents,
        "amount_captured": refund.amount_cents,
        "amount_refunded": refund.amount_cents,
        "billing_details": { "address": null, "email": null, "name": null, "phone": null },
        "captured": true,
        "created": chrono::Utc::now().timestamp(),
        "currency": refund.currency,
        "disputed": false,
        "livemode": false,
        "metadata": {},
        "paid": true,
        "payment_intent": null,
        "refunded": false,
        "status": "succeeded",
    })
}

/// What a payment's refunds gave back: those not failed or canceled.
pub fn refunded(refunds: &[Refund]) -> i64 {
    refunds
        .iter()
        .filter(|refund| !refund.status.undone())
        .map(|refund| refund.amount_cents)
        .sum()
}

pub fn refund_list(refunds: &[Refund]) -> Value {
    json!({
        "object": "list",
        "data": refunds.iter().map(refund_object).collect::<Vec<_>>(),
        "has_more": false,
        "url": "/v1/refunds",
    })
}

/// A page of PaymentIntents, as the list (`url`) or the search
/// (`search_result`) answers.
pub fn intent_page(page: &IntentPage, search: bool) -> Value {
    let data: Vec<IntentObject> = page
        .intents
        .iter()
        .map(|intent| intent_object(intent, None))
        .collect();
    if search {
        json!({
            "object": "search_result",
            "data": data,
            "has_more": page.has_more,
            "next_page": null,
            "url": "/v1/payment_intents/search",
        })
    } else {
        json!({
            "object": "list",
            "data": data,
            "has_more": page.has_more,
            "url": "/v1/payment_intents",
        })
    }
}

/// A dispute of a PaymentIntent's charge, as its event carries it.
pub fn dispute_object(intent: &PaymentIntent) -> Value {
    json!({
        "id": format!("dp_sim_{}", intent.id),
        "object": "dispute",
        "amount": intent.amount_received_cents,
        "balance_transactions": [],
        "charge": intent.latest_charge,
        "created": chrono::Utc::now().timestamp(),
        "currency": intent.currency,
        "evidence": {},
        "evidence_details": {
            "due_by": null, "has_evidence": false, "past_due": false, "submission_count": 0,
        },
        "is_charge_refundable": false,
        "livemode": false,
        "metadata": {},
        "payment_intent": intent.id,
        "reason": "fraudulent",
        "status": "needs_response",
    })
}

/// An event as Stripe sends it to a webhook endpoint.
pub fn event(id: &str, event_type: &str, created: i64, object: Value) -> Value {
    json!({
        "id": id,
        "object": "event",
        "api_version": ridepay_gateway::STRIPE_VERSION,
        "created": created,
        "data": { "object": object },
        "livemode": false,
        "pending_webhooks": 1,
        "request": { "id": null, "idempotency_key": null },
        "type": event_type,
    })
}

pub fn error(status: u16, kind: &str, code: Option<&str>, message: impl Into<String>) -> Response {
    Response::json(
        status,
        &json!({ "error": error_object(kind, code, message) }),
    )
}

fn error_object(kind: &str, code: Option<&str>, message: impl Into<String>) -> Value {
    let mut error = json!({ "type": kind, "message": message.into() });
    if let Some(code) = code {
        error["code"] = json!(code);
    }
    error
}

pub fn invalid_request(status: u16, code: &str, message: impl Into<String>) -> Response {
    error(status, "invalid_request_error", Some(code), message)
}

/// Stripe's answer to too many requests, or too many at once.
pub fn rate_limited() -> Response {
    invalid_request(
        429,
        "rate_limit",
        "Too many requests hit the API too quickly.",
    )
    .with_header(
        "Retry-After",
        crate::RATE_LIMIT_RETRY_AFTER.as_secs().to_string(),
    )
    .with_header("Stripe-Should-Retry", "true")
}

pub fn api_error(message: impl Into<String>) -> Response {
    // Stripe flags the failures a retry may cure.
    error(500, "api_error", None, message).with_header("Stripe-Should-Retry", "true")
}

/// A refusal of the doubles in Stripe's words. (A decline of a
/// PaymentIntent carries the intent: `intents` answers those.)
pub fn refusal(err: GatewayError) -> Response {
    match err {
        GatewayError::Rejected { ref message } => {
            let (code, text) = message
                .split_once(": ")
                .unwrap_or(("parameter_invalid", message));
            let mut error = error_object("invalid_request_error", Some(code), text);
            // Stripe names the parameter that named what it does not have.
            if err.is_unknown_payment_method() {
                error["param"] = json!("payment_method");
            }
            Response::json(400, &json!({ "error": error }))
        }
        GatewayError::Misconfigured { reason } => error(400, "idempotency_error", None, reason),
        // Stripe's answer to every retry after a 500 it saved.
        GatewayError::SavedFailure { .. } => error(
            500,
            "api_error",
            None,
            "Simulated failure, saved under this key.",
        )
        .with_header("Idempotent-Replayed", "true"),
        other => api_error(other.to_string()),
    }
}
