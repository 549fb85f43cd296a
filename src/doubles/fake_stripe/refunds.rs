//! The Refunds API: `POST /v1/refunds`, with Stripe's idempotency, the same
//! fault knobs as charges, and a `charge.refunded` event for each new refund.

use super::charges::{self, storage, with_faults, Effect, Form};
use super::http::{Request, Response};
use super::server::{Reply, State};
use super::wire::{invalid_request, refund_object};
use crate::doubles::store;
use crate::payments::RefundRequest;

const REASONS: [&str; 3] = ["duplicate", "fraudulent", "requested_by_customer"];

/// `POST /v1/refunds`.
pub fn create(state: &State, request: &Request) -> Reply {
    with_faults(state, request, refund_request, |conn, refund| {
        let recorded = store::record_refund(conn, &refund).map_err(charges::refusal)?;
        let charge = store::find(conn, &recorded.refund.charge_id)
            .map_err(storage)?
            .ok_or_else(|| storage(diesel::result::Error::NotFound))?;
        let object = super::wire::charge_object(conn, &charge).map_err(storage)?;
        Ok(Effect {
            answer: charges::replayed(
                Response::json(200, &refund_object(&recorded.refund)),
                recorded.replayed,
            ),
            event: (!recorded.replayed).then_some(("charge.refunded", object)),
        })
    })
}

fn refund_request(request: &Request, idempotency_key: String) -> Result<RefundRequest, Response> {
    let form = Form::parse(request)?;
    let charge_id = form.required("charge")?;
    let amount_cents = form
        .param("amount")
        .map(|amount| Form::positive_amount(&amount))
        .transpose()?;
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
        charge_id,
        amount_cents,
        reason,
        metadata: form.metadata(),
    })
}
