//! The body of `POST /api/rides`, parsed into a request that is always valid.

use serde::{Deserialize, Serialize};

use crate::idempotency::CanonicalRequest;
use crate::payments::CaptureMethod;
use crate::validation::{is_payment_method_id, parse_body, FieldError};
use crate::wire::requests::RideBody;

use crate::rides::fare::{CURRENCIES, MAX_AMOUNT_CENTS, MIN_AMOUNT_CENTS};

/// A validated ride request with defaults applied. Its JSON form is the
/// canonical request: fingerprinted, and stored so a worker can finish it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RideParams {
    // In sorted order, as the canonical form needs.
    pub amount_cents: i64,
    pub capture_method: CaptureMethod,
    pub currency: String,
    pub origin_lat: f64,
    pub origin_lon: f64,
    /// None: the user's saved card.
    pub payment_method: Option<String>,
    pub target_lat: f64,
    pub target_lon: f64,
}

impl RideParams {
    pub fn parse(body: &[u8]) -> Result<RideParams, Vec<FieldError>> {
        let body: RideBody = parse_body(body, expected).map_err(|err| vec![err])?;
        let mut errors = Vec::new();
        let origin_lat = coordinate(&mut errors, "origin_lat", body.origin_lat, 90.0);
        let origin_lon = coordinate(&mut errors, "origin_lon", body.origin_lon, 180.0);
        let target_lat = coordinate(&mut errors, "target_lat", body.target_lat, 90.0);
        let target_lon = coordinate(&mut errors, "target_lon", body.target_lon, 180.0);
        let amount_cents = match body.amount_cents {
            None => required(&mut errors, "amount_cents"),
            Some(amount) if !(MIN_AMOUNT_CENTS..=MAX_AMOUNT_CENTS).contains(&amount) => {
                errors.push(FieldError::new(
                    "amount_cents",
                    format!(
                        "must be between {MIN_AMOUNT_CENTS} and {MAX_AMOUNT_CENTS} (minor units)"
                    ),
                ));
                0
            }
            Some(amount) => amount,
        };
        let currency = body.currency.unwrap_or_else(|| CURRENCIES[0].to_owned());
        if !CURRENCIES.contains(&currency.as_str()) {
            errors.push(FieldError::new(
                "currency",
                format!("must be one of {}", CURRENCIES.join(", ")),
            ));
        }
        if let Some(method) = &body.payment_method {
            if !is_payment_method_id(method) {
                errors.push(FieldError::new(
                    "payment_method",
                    "must be a payment method id: pm_ and 1 to 252 letters, digits or _",
                ));
            }
        }
        let capture_method = match body.capture_method.as_deref() {
            None => CaptureMethod::Manual,
            Some(text) => CaptureMethod::parse(text).unwrap_or_else(|| {
                errors.push(FieldError::new(
                    "capture_method",
                    "must be manual or automatic",
                ));
                CaptureMethod::Manual
            }),
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(RideParams {
            origin_lat,
            origin_lon,
            target_lat,
            target_lon,
            amount_cents,
            currency,
            payment_method: body.payment_method,
            capture_method,
        })
    }

    /// The canonical JSON form.
    pub fn canonical(&self) -> CanonicalRequest {
        CanonicalRequest::of(self)
    }
}

fn required<T: Default>(errors: &mut Vec<FieldError>, field: &str) -> T {
    errors.push(FieldError::new(field, "is required"));
    T::default()
}

fn coordinate(errors: &mut Vec<FieldError>, field: &str, value: Option<f64>, bound: f64) -> f64 {
    match value {
        None => required(errors, field),
        Some(value) if !(-bound..=bound).contains(&value) => {
            errors.push(FieldError::new(
                field,
                format!("must be between -{bound} and {bound}"),
            ));
            0.0
        }
        // Adding 0.0 turns -0.0 into 0.0: the same place, so the same request.
        Some(value) => value + 0.0,
    }
}

/// What a mistyped field should have been.
fn expected(field: &str) -> Option<&'static str> {
    match field {
        "amount_cents" => Some("must be an integer number of minor units"),
        "origin_lat" | "origin_lon" | "target_lat" | "target_lon" => Some("must be a number"),
        "currency" | "payment_method" | "capture_method" => Some("must be a string"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = r#"{"origin_lat": 37.77, "origin_lon": -122.42, "target_lat": 37.80,
        "target_lon": -122.27, "amount_cents": 2000, "currency": "usd", "payment_method": "pm_card_visa"}"#;

    fn fields(body: &str) -> Vec<String> {
        RideParams::parse(body.as_bytes())
            .unwrap_err()
            .into_iter()
            .map(|e| e.field)
            .collect()
    }

    #[test]
    fn a_valid_body_parses() {
        let params = RideParams::parse(VALID.as_bytes()).unwrap();
        assert_eq!(params.amount_cents, 2000);
        assert_eq!(params.payment_method.as_deref(), Some("pm_card_visa"));
        assert_eq!(params.capture_method, CaptureMethod::Manual);
    }

    #[test]
    fn currency_defaults_to_usd_in_the_canonical_form() {
        let without = r#"{"origin_lat": 1, "origin_lon": 2, "target_lat": 3, "target_lon": 4, "amount_cents": 100}"#;
        let with = r#"{"currency": "usd", "target_lon": 4, "target_lat": 3, "origin_lon": 2, "origin_lat": 1, "amount_cents": 100}"#;
        let a = RideParams::parse(without.as_bytes()).unwrap();
        let b = RideParams::parse(with.as_bytes()).unwrap();
        assert_eq!(a.canonical(), b.canonical());
    }

    /// The bytes the fingerprint hashes: a change here would make every
    /// stored key refuse its own retries.
    #[test]
    fn the_canonical_form_is_sorted_compact_json() {
        let params = RideParams::parse(VALID.as_bytes()).unwrap();
        assert_eq!(
            std::str::from_utf8(params.canonical().as_bytes()).unwrap(),
            r#"{"amount_cents":2000,"capture_method":"manual","currency":"usd","origin_lat":37.77,"origin_lon":-122.42,"payment_method":"pm_card_visa","target_lat":37.8,"target_lon":-122.27}"#
        );
    }

    #[test]
    fn negative_zero_is_zero() {
        let a = r#"{"origin_lat": -0.0, "origin_lon": 0, "target_lat": 0, "target_lon": 0, "amount_cents": 100}"#;
        let b = r#"{"origin_lat": 0, "origin_lon": 0, "target_lat": 0, "target_lon": 0, "amount_cents": 100}"#;
        assert_eq!(
            RideParams::parse(a.as_bytes()).unwrap().canonical(),
            RideParams::parse(b.as_bytes()).unwrap().canonical()
        );
    }

    #[test]
    fn every_missing_field_is_named() {
        assert_eq!(
            fields("{}"),
            [
                "origin_lat",
                "origin_lon",
                "target_lat",
                "target_lon",
                "amount_cents"
            ]
        );
    }

    #[test]
    fn out_of_range_values_are_named() {
        let body = r#"{"origin_lat": 91, "origin_lon": -181, "target_lat": 0, "target_lon": 0,
            "amount_cents": 49, "currency": "jpy", "payment_method": "tok_visa",
            "capture_method": "later"}"#;
        assert_eq!(
            fields(body),
            [
                "origin_lat",
                "origin_lon",
                "amount_cents",
                "currency",
                "payment_method",
                "capture_method"
            ]
        );
    }

    #[test]
    fn unknown_duplicate_and_mistyped_fields_are_named() {
        assert_eq!(fields(r#"{"tip": 5}"#), ["tip"]);
        assert_eq!(
            fields(r#"{"amount_cents": 100, "amount_cents": 100}"#),
            ["amount_cents"]
        );
        assert_eq!(fields(r#"{"amount_cents": 20.5}"#), ["amount_cents"]);
        assert_eq!(fields(r#"{"amount_cents": 1e30}"#), ["amount_cents"]);
        assert_eq!(fields(r#"{"origin_lat": "north"}"#), ["origin_lat"]);
    }

    #[test]
    fn non_objects_and_broken_json_are_body_errors() {
        assert_eq!(fields("[]"), ["body"]);
        // serde alone would take the fields in order from an array.
        assert_eq!(fields("[37.77, -122.42, 37.8, -122.27, 2000]"), ["body"]);
        assert_eq!(fields("{"), ["body"]);
        assert_eq!(fields(""), ["body"]);
        assert_eq!(fields(r#"{"origin_lat": NaN}"#), ["body"]);
    }

    #[test]
    fn the_canonical_form_round_trips() {
        let params = RideParams::parse(VALID.as_bytes()).unwrap();
        let stored: RideParams = serde_json::from_slice(params.canonical().as_bytes()).unwrap();
        assert_eq!(stored, params);
    }
}
