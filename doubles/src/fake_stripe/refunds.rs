//! The Refunds API: `POST /v1/refunds` on a PaymentIntent (or a charge made
//! before them), with Stripe's idempotency and the fault knobs, and
//! `GET /v1/refunds?payment_intent=` (or `charge=`).

use super::calls::{connection, with_faults, Form};
use super::http::{Request, Response};
use super::state::{Reply, State};
use super::wire::{self, invalid_request};
use crate::events::Double;
use crate::refunds;
use ridepay_gateway::{Payment, RefundRequest};

const REASONS: [&str; 3] = ["duplicate", "fraudulent", "requested_by_customer"];

/// `POST /v1/refunds`.
pub fn create(state: &State, request: &Request) -> Reply {
    with_faults(state, request, refund_request, |conn, refund| {
        refunds::refund(conn, &refund, Double::Fake)
            .map(|made| Response::json(200, &wire::refund_object(&made)))
            .map_err(wire::refusal)
    })
}

/// The payment a form or query names: exactly one of `payment_intent` and
/// `charge`.
fn payment(form: &Form) -> Result<Payment, Response> {
    match (form.param("payment_intent"), form.param("charge")) {
        (Some(intent), None) => Ok(Payment::Intent(intent)),
        (None, Some(charge)) => Ok(Payment::Charge(charge)),
        _ => Err(invalid_request(
            400,
            "parameter_missing",
            "Send exactly one of payment_intent and charge.",
        )),
    }
}

fn refund_request(request: &Request, idempotency_key: String) -> Result<RefundRequest, Response> {
    let form = Form::parse(request)?;
    let payment = payment(&form)?;
    let amount_cents = form.named_amount("refunds")?;
    let reason = form.param("reason");
    if let Some(reason) = &reason {
        if !REASONS.contains(&reason.as_str()) {
            return Err(invalid_request(
                400,
                "parameter_invalid_string",
                format!("Invalid reason: must be one of {}", REASONS.join(", ")),
            ));
        }
    }
    Ok(RefundRequest {
        idempotency_key,
        payment,
        amount_cents,
        reason,
        metadata: form.metadata(),
    })
}

/// `GET /v1/refunds`: one payment's refunds, newest first.
pub fn list(state: &State, request: &Request) -> Response {
    let query = match Form::from_query(&request.query) {
        Ok(query) => query,
        Err(refusal) => return refusal,
    };
    let payment = match payment(&query) {
        Ok(payment) => payment,
        Err(refusal) => return refusal,
    };
    let found = connection(state)
        .and_then(|mut conn| refunds::refunds_of(&mut conn, &payment).map_err(wire::refusal));
    match found {
        Ok(refunds) => Response::json(200, &wire::refund_list(&refunds)),
        Err(refusal) => refusal,
    }
}
