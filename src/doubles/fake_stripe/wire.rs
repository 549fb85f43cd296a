//! The ledger's charges and errors in Stripe's JSON.

use diesel::{PgConnection, QueryResult};

use super::http::Response;
use crate::doubles::store::{self, StoredCharge, StoredRefund, DECLINE_MESSAGE};
use crate::payments::stripe::wire::{
    ChargeObject, ErrorBody, ErrorObject, ListObject, RefundObject, SourceObject,
};

/// The charge with its refunds, as Stripe shows it with `expand[]=refunds`.
pub fn charge_object(conn: &mut PgConnection, charge: &StoredCharge) -> QueryResult<ChargeObject> {
    let refunds: Vec<RefundObject> = store::refunds_of(conn, &charge.id)?
        .iter()
        .map(refund_object)
        .collect();
    let mut object = bare_charge_object(charge);
    object.amount_refunded = refunds.iter().map(|refund| refund.amount).sum();
    object.refunded = object.amount_refunded == charge.amount_cents;
    object.refunds = Some(ListObject {
        object: "list".to_owned(),
        has_more: false,
        url: format!("/v1/charges/{}/refunds", charge.id),
        data: refunds,
    });
    Ok(object)
}

pub fn refund_object(refund: &StoredRefund) -> RefundObject {
    RefundObject {
        id: refund.id.clone(),
        object: "refund".to_owned(),
        amount: refund.amount_cents,
        charge: Some(refund.charge_id.clone()),
        currency: refund.currency.clone(),
        status: Some(refund.status.clone()),
        reason: refund.reason.clone(),
        metadata: serde_json::from_value(refund.metadata.clone()).unwrap_or_default(),
        created: refund.created_at.timestamp(),
    }
}

fn bare_charge_object(charge: &StoredCharge) -> ChargeObject {
    let (source, customer) = if charge.source.starts_with("cus_") {
        (None, Some(charge.source.clone()))
    } else {
        let card = SourceObject {
            id: charge.source.clone(),
            object: "card".to_owned(),
        };
        (Some(card), None)
    };
    let succeeded = charge.succeeded();
    ChargeObject {
        id: charge.id.clone(),
        object: "charge".to_owned(),
        amount: charge.amount_cents,
        currency: charge.currency.clone(),
        status: charge.status.clone(),
        paid: succeeded,
        captured: succeeded,
        failure_code: charge.failure_code.clone(),
        failure_message: (!succeeded).then(|| DECLINE_MESSAGE.to_owned()),
        metadata: serde_json::from_value(charge.metadata.clone()).unwrap_or_default(),
        created: charge.created_at.timestamp(),
        amount_refunded: 0,
        refunded: false,
        description: charge.description.clone(),
        source,
        customer,
        disputed: charge.disputed,
        refunds: None,
    }
}

/// The answer Stripe gives for a charge it made: the charge, or for a
/// decline a 402 `card_error` naming the failed charge.
pub fn charge_answer(charge: &StoredCharge, object: &ChargeObject) -> Response {
    match &charge.failure_code {
        None => Response::json(200, object),
        Some(code) => Response::json(
            402,
            &ErrorBody {
                error: ErrorObject {
                    kind: "card_error".to_owned(),
                    code: Some(code.clone()),
                    decline_code: charge.decline_code.clone(),
                    message: Some(DECLINE_MESSAGE.to_owned()),
                    charge: Some(charge.id.clone()),
                    payment_intent: None,
                },
            },
        ),
    }
}

pub fn error(status: u16, kind: &str, code: Option<&str>, message: impl Into<String>) -> Response {
    Response::json(
        status,
        &ErrorBody {
            error: ErrorObject {
                kind: kind.to_owned(),
                code: code.map(str::to_owned),
                decline_code: None,
                message: Some(message.into()),
                charge: None,
                payment_intent: None,
            },
        },
    )
}

pub fn invalid_request(status: u16, code: &str, message: impl Into<String>) -> Response {
    error(status, "invalid_request_error", Some(code), message)
}

pub fn api_error(message: impl Into<String>) -> Response {
    // Stripe flags the failures a retry may cure.
    error(500, "api_error", None, message).with_header("Stripe-Should-Retry", "true")
}
