//! Refunds over Stripe's HTTP API: `POST /v1/refunds` on a PaymentIntent
//! (or, for a ride paid through the Charges API, on its charge), and the
//! refunds of a payment listed to check an event against.

use super::intents::{metadata_fields, pair, Form};
use super::outcome::unreadable;
use super::wire::{ListObject, RefundObject};
use ridepay_gateway::{GatewayError, Payment, Refund, RefundRequest, RefundState};

/// Stripe's largest page: more refunds than this of one ride would be
/// more than a hundred partial refunds.
pub const PAGE_LIMIT: &str = "100";

/// `POST /v1/refunds`.
pub fn refund_form(request: &RefundRequest) -> Form {
    let mut form = vec![
        match &request.payment {
            Payment::Intent(id) => pair("payment_intent", id),
            Payment::Charge(id) => pair("charge", id),
        },
        pair("amount", request.amount_cents),
    ];
    form.extend(request.reason.iter().map(|reason| pair("reason", reason)));
    form.extend(metadata_fields(&request.metadata));
    form
}

/// The query of `GET /v1/refunds` for a payment's refunds.
pub fn list_query(payment: &Payment) -> [(&'static str, &str); 2] {
    let field = match payment {
        Payment::Intent(_) => "payment_intent",
        Payment::Charge(_) => "charge",
    };
    [(field, payment.id()), ("limit", PAGE_LIMIT)]
}

fn refund_of(object: RefundObject) -> Result<Refund, GatewayError> {
    // A status not yet known (null) is one still settling.
    let status = match object.status.as_deref() {
        None => RefundState::Pending,
        Some(status) => RefundState::parse(status)
            .ok_or_else(|| unreadable("refund", format!("status {status:?}")))?,
    };
    Ok(Refund {
        id: object.id,
        payment_intent: object.payment_intent,
        charge: object.charge,
        amount_cents: object.amount,
        currency: object.currency,
        status,
        reason: object.reason,
        metadata: object.metadata,
    })
}

/// A refund Stripe made, in whatever status it has yet.
pub fn refund(body: &[u8]) -> Result<Refund, GatewayError> {
    refund_of(serde_json::from_slice(body).map_err(|err| unreadable("refund", err))?)
}

/// A page of refunds.
pub fn refund_list(body: &[u8]) -> Result<Vec<Refund>, GatewayError> {
    let list: ListObject<RefundObject> =
        serde_json::from_slice(body).map_err(|err| unreadable("refund list", err))?;
    if list.has_more {
        log::warn!("a payment has more than {PAGE_LIMIT} refunds; only the newest are checked");
    }
    list.data.into_iter().map(refund_of).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refund_with_the_nullable_fields_null_is_read_as_still_settling() {
        let body = br#"{"id": "re_1", "object": "refund", "amount": 500, "charge": null,
                        "payment_intent": null, "currency": "usd", "status": null, "metadata": null}"#;
        let refund = refund(body).unwrap();
        assert_eq!(
            (refund.id.as_str(), refund.amount_cents, refund.status),
            ("re_1", 500, RefundState::Pending)
        );
        assert!(refund.metadata.is_empty());
    }

    #[test]
    fn stripes_2026_refund_example_is_read() {
        let fixtures: serde_json::Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/stripe/fixtures-2026.json"
        )))
        .unwrap();
        let body = serde_json::to_vec(&fixtures["resources"]["refund"]).unwrap();
        let refund = refund(&body).unwrap();
        assert_eq!(
            (
                refund.id.as_str(),
                refund.charge.as_deref(),
                refund.amount_cents,
                refund.status
            ),
            (
                "re_1Pgc72B7WZ01zgkWqPvrRrPE",
                Some("ch_1PgafuB7WZ01zgkWXYmPNZs8"),
                100,
                RefundState::Succeeded
            )
        );
    }

    #[test]
    fn a_refund_names_its_payment_and_a_list_asks_for_a_full_page() {
        let form = refund_form(&RefundRequest {
            idempotency_key: "k".to_owned(),
            payment: Payment::Intent("pi_1".to_owned()),
            amount_cents: 500,
            reason: Some("duplicate".to_owned()),
            metadata: vec![("ride_id".to_owned(), "7".to_owned())],
        });
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("payment_intent", "pi_1"),
                ("amount", "500"),
                ("reason", "duplicate"),
                ("metadata[ride_id]", "7")
            ]
        );
        assert_eq!(
            list_query(&Payment::Charge("ch_1".to_owned())),
            [("charge", "ch_1"), ("limit", "100")]
        );
    }
}
