//! The body of `POST /api/rides/{id}/tip`.

use serde::{Deserialize, Serialize};

use crate::ids::RideId;
use crate::validation::{parse_body, FieldError};
use crate::wire::requests::TipBody;

/// The least and the most a tip may be (minor units).
pub const MIN_TIP_CENTS: i64 = 1;
pub const MAX_TIP_CENTS: i64 = 100_000;

/// A validated tip. Its JSON form is the canonical request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TipParams {
    // In sorted order, as the canonical form needs.
    pub amount_cents: i64,
    pub ride_id: RideId,
}

impl TipParams {
    pub fn parse(ride_id: RideId, body: &[u8]) -> Result<TipParams, Vec<FieldError>> {
        let body: TipBody = parse_body(body, expected).map_err(|err| vec![err])?;
        match body.amount_cents {
            None => Err(vec![FieldError::new("amount_cents", "is required")]),
            Some(amount) if !(MIN_TIP_CENTS..=MAX_TIP_CENTS).contains(&amount) => {
                Err(vec![FieldError::new(
                    "amount_cents",
                    format!("must be between {MIN_TIP_CENTS} and {MAX_TIP_CENTS} (minor units)"),
                )])
            }
            Some(amount_cents) => Ok(TipParams {
                amount_cents,
                ride_id,
            }),
        }
    }
}

fn expected(field: &str) -> Option<&'static str> {
    (field == "amount_cents").then_some("must be an integer number of minor units")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tip_is_required_and_in_range() {
        let parse = |body: &str| TipParams::parse(RideId(7), body.as_bytes());
        assert_eq!(
            parse(r#"{"amount_cents": 300}"#).unwrap(),
            TipParams {
                amount_cents: 300,
                ride_id: RideId(7)
            }
        );
        for body in [
            "{}",
            r#"{"amount_cents": 0}"#,
            r#"{"amount_cents": 100001}"#,
            r#"{"amount_cents": 2.5}"#,
            r#"{"amount_cents": 300, "tip": 1}"#,
        ] {
            assert!(parse(body).is_err(), "{body}");
        }
    }
}
