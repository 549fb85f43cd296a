//! The body of `POST /api/rides/{id}/cancel`.

use serde::{Deserialize, Serialize};

use crate::ids::RideId;
use crate::rides::fare::MAX_AMOUNT_CENTS;
use crate::validation::{parse_body, FieldError};
use crate::wire::requests::CancelBody;

/// A validated cancellation. Its JSON form is the canonical request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelParams {
    // In sorted order, as the canonical form needs.
    pub cancellation_fee_cents: i64,
    pub ride_id: RideId,
}

impl CancelParams {
    pub fn parse(ride_id: RideId, body: &[u8]) -> Result<CancelParams, Vec<FieldError>> {
        let fee = if body.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            parse_body::<CancelBody>(body, expected)
                .map_err(|err| vec![err])?
                .cancellation_fee_cents
        };
        match fee.unwrap_or(0) {
            fee if !(0..=MAX_AMOUNT_CENTS).contains(&fee) => Err(vec![FieldError::new(
                "cancellation_fee_cents",
                format!("must be between 0 and {MAX_AMOUNT_CENTS} (minor units)"),
            )]),
            cancellation_fee_cents => Ok(CancelParams {
                cancellation_fee_cents,
                ride_id,
            }),
        }
    }
}

fn expected(field: &str) -> Option<&'static str> {
    (field == "cancellation_fee_cents").then_some("must be an integer number of minor units")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fee_defaults_to_nothing_and_is_never_negative() {
        let parse = |body: &str| CancelParams::parse(RideId(7), body.as_bytes());
        assert_eq!(parse("").unwrap().cancellation_fee_cents, 0);
        assert_eq!(parse("{}").unwrap().cancellation_fee_cents, 0);
        assert_eq!(
            parse(r#"{"cancellation_fee_cents": 500}"#)
                .unwrap()
                .cancellation_fee_cents,
            500
        );
        for body in [r#"{"cancellation_fee_cents": -1}"#, r#"{"fee": 1}"#, "[]"] {
            assert!(parse(body).is_err(), "{body}");
        }
    }
}
