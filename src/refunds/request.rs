//! The body of `POST /api/rides/{id}/refunds`, parsed into a request that is
//! always valid.

use serde::{Deserialize, Serialize};

use crate::idempotency::CanonicalRequest;
use crate::ids::RideId;
use crate::rides::fare::MAX_AMOUNT_CENTS;
use crate::validation::{parse_body, FieldError};
use crate::wire::requests::RefundBody;

/// Stripe's refund reasons.
pub const REASONS: [&str; 3] = ["requested_by_customer", "duplicate", "fraudulent"];

/// A validated refund request. Its JSON form is the canonical request:
/// fingerprinted (with the path, which names the ride too), and stored so a
/// worker can finish it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefundParams {
    // In sorted order, as the canonical form needs.
    /// `None`: whatever remains of the charge when the refund is created.
    pub amount_cents: Option<i64>,
    pub reason: Option<String>,
    pub ride_id: RideId,
}

impl RefundParams {
    /// An empty body is a refund of everything that remains.
    pub fn parse(ride_id: RideId, body: &[u8]) -> Result<RefundParams, Vec<FieldError>> {
        let body: RefundBody = if body.iter().all(u8::is_ascii_whitespace) {
            RefundBody {
                amount_cents: None,
                reason: None,
            }
        } else {
            parse_body(body, expected).map_err(|err| vec![err])?
        };
        let mut errors = Vec::new();
        if let Some(amount) = body.amount_cents {
            if !(1..=MAX_AMOUNT_CENTS).contains(&amount) {
                errors.push(FieldError::new(
                    "amount_cents",
                    format!("must be between 1 and {MAX_AMOUNT_CENTS} (minor units)"),
                ));
            }
        }
        if let Some(reason) = &body.reason {
            if !REASONS.contains(&reason.as_str()) {
                errors.push(FieldError::new(
                    "reason",
                    format!("must be one of {}", REASONS.join(", ")),
                ));
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(RefundParams {
            ride_id,
            amount_cents: body.amount_cents,
            reason: body.reason,
        })
    }

    /// The canonical JSON form.
    pub fn canonical(&self) -> CanonicalRequest {
        CanonicalRequest::of(self)
    }
}

fn expected(field: &str) -> Option<&'static str> {
    match field {
        "amount_cents" => Some("must be an integer number of minor units"),
        "reason" => Some("must be a string"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(body: &str) -> Vec<String> {
        RefundParams::parse(RideId(7), body.as_bytes())
            .unwrap_err()
            .into_iter()
            .map(|e| e.field)
            .collect()
    }

    #[test]
    fn an_empty_object_or_body_refunds_everything() {
        for body in ["{}", "", " "] {
            let params = RefundParams::parse(RideId(7), body.as_bytes()).unwrap();
            assert_eq!(
                (params.ride_id, params.amount_cents, params.reason),
                (RideId(7), None, None)
            );
        }
    }

    #[test]
    fn the_canonical_form_ignores_field_order_and_round_trips() {
        let a = RefundParams::parse(
            RideId(7),
            br#"{"amount_cents": 500, "reason": "duplicate"}"#,
        )
        .unwrap();
        let b = RefundParams::parse(
            RideId(7),
            br#"{"reason": "duplicate", "amount_cents": 500}"#,
        )
        .unwrap();
        assert_eq!(a.canonical(), b.canonical());
        let stored: RefundParams = serde_json::from_slice(a.canonical().as_bytes()).unwrap();
        assert_eq!(stored, a);
    }

    #[test]
    fn bad_unknown_duplicate_and_mistyped_fields_are_named() {
        assert_eq!(
            fields(r#"{"amount_cents": 0, "reason": "bored"}"#),
            ["amount_cents", "reason"]
        );
        assert_eq!(fields(r#"{"tip": 5}"#), ["tip"]);
        assert_eq!(
            fields(r#"{"amount_cents": 1, "amount_cents": 1}"#),
            ["amount_cents"]
        );
        assert_eq!(fields(r#"{"amount_cents": 2.5}"#), ["amount_cents"]);
        assert_eq!(fields(r#"{"reason": 3}"#), ["reason"]);
        assert_eq!(fields("[]"), ["body"]);
        assert_eq!(fields("{"), ["body"]);
    }
}
