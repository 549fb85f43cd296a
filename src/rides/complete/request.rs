//! The body of `POST /api/rides/{id}/complete`.

use serde::{Deserialize, Serialize};

use crate::ids::RideId;
use crate::rides::fare::{MAX_AMOUNT_CENTS, MIN_AMOUNT_CENTS};
use crate::validation::{parse_body, FieldError};
use crate::wire::requests::CompleteBody;

/// A validated completion. Its JSON form is the canonical request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompleteParams {
    // In sorted order, as the canonical form needs.
    pub final_amount_cents: i64,
    pub ride_id: RideId,
}

impl CompleteParams {
    pub fn parse(ride_id: RideId, body: &[u8]) -> Result<CompleteParams, Vec<FieldError>> {
        let body: CompleteBody = parse_body(body, expected).map_err(|err| vec![err])?;
        match body.final_amount_cents {
            None => Err(vec![FieldError::new("final_amount_cents", "is required")]),
            Some(amount) if !(MIN_AMOUNT_CENTS..=MAX_AMOUNT_CENTS).contains(&amount) => {
                Err(vec![FieldError::new(
                    "final_amount_cents",
                    format!(
                        "must be between {MIN_AMOUNT_CENTS} and {MAX_AMOUNT_CENTS} (minor units)"
                    ),
                )])
            }
            Some(final_amount_cents) => Ok(CompleteParams {
                final_amount_cents,
                ride_id,
            }),
        }
    }
}

fn expected(field: &str) -> Option<&'static str> {
    (field == "final_amount_cents").then_some("must be an integer number of minor units")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_final_fare_is_required_and_in_range() {
        let parse = |body: &str| CompleteParams::parse(RideId(7), body.as_bytes());
        assert_eq!(
            parse(r#"{"final_amount_cents": 1800}"#).unwrap(),
            CompleteParams {
                final_amount_cents: 1800,
                ride_id: RideId(7)
            }
        );
        for body in [
            "{}",
            r#"{"final_amount_cents": 49}"#,
            r#"{"final_amount_cents": 1.5}"#,
            r#"{"tip": 1}"#,
        ] {
            assert!(parse(body).is_err(), "{body}");
        }
    }
}
