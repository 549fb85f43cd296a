//! Property tests of what parses untrusted input: the `Idempotency-Key`
//! header, the ride body, and the canonical request behind the fingerprint.
//! `PROPTEST_CASES` bounds the cases (CI sets it).

use proptest::prelude::*;
use ridepay::idempotency::{Fingerprint, IdempotencyKey};
use ridepay::payments::CaptureMethod;
use ridepay::rides::create::RideParams;
use serde_json::{json, Value};

fn fingerprint(params: &RideParams) -> Fingerprint {
    Fingerprint::compute("POST", "/api/rides", params.canonical().as_bytes())
}

/// An RFC 8941 string holding `key`.
fn quoted(key: &str) -> String {
    format!("\"{}\"", key.replace('\\', "\\\\").replace('"', "\\\""))
}

fn valid_body() -> impl Strategy<Value = Value> {
    (
        -90.0..=90.0f64,
        -180.0..=180.0f64,
        -90.0..=90.0f64,
        -180.0..=180.0f64,
        50..=1_000_000i64,
        prop_oneof![
            Just(None),
            Just(Some("usd")),
            Just(Some("eur")),
            Just(Some("gbp"))
        ],
        prop_oneof![Just(None), "pm_[a-zA-Z0-9_]{1,40}".prop_map(Some)],
    )
        .prop_map(|(olat, olon, tlat, tlon, amount, currency, source)| {
            let mut body = json!({
                "origin_lat": olat, "origin_lon": olon, "target_lat": tlat,
                "target_lon": tlon, "amount_cents": amount,
            });
            if let Some(currency) = currency {
                body["currency"] = json!(currency);
            }
            if let Some(source) = source {
                body["payment_method"] = json!(source);
            }
            body
        })
}

/// `body` with its fields in `order` and `spaces` of padding around every token.
fn render(body: &Value, order: &[String], spaces: usize) -> String {
    let pad = " ".repeat(spaces);
    let fields: Vec<String> = order
        .iter()
        .map(|name| format!("{pad}\"{name}\"{pad}:{pad}{}{pad}", body[name]))
        .collect();
    format!("{pad}{{{}}}{pad}", fields.join(","))
}

/// A valid body, and its field names in a random order.
fn shuffled_body() -> impl Strategy<Value = (Value, Vec<String>)> {
    valid_body().prop_flat_map(|body| {
        let names: Vec<String> = body.as_object().unwrap().keys().cloned().collect();
        (Just(body), Just(names).prop_shuffle())
    })
}

proptest! {
    #[test]
    fn printable_keys_parse_bare_and_quoted_to_the_same_key(key in "[ -~]{1,255}") {
        prop_assume!(!key.trim().is_empty());
        prop_assume!(!key.starts_with('"'));
        let bare = IdempotencyKey::parse(key.as_bytes()).unwrap();
        let from_quoted = IdempotencyKey::parse(quoted(&key).as_bytes()).unwrap();
        prop_assert_eq!(bare.as_str(), key.as_str());
        prop_assert_eq!(from_quoted, bare);
    }

    #[test]
    fn keys_with_a_control_or_non_ascii_character_are_refused(
        head in "[ -~]{0,20}", bad in "[\u{0}-\u{1f}\u{7f}\u{80}-\u{10ffff}]", tail in "[ -~]{0,20}"
    ) {
        let key = format!("{head}{bad}{tail}");
        prop_assert!(IdempotencyKey::parse(key.as_bytes()).is_err());
        prop_assert!(IdempotencyKey::parse(quoted(&key).as_bytes()).is_err());
    }

    #[test]
    fn keys_of_256_characters_or_more_are_refused(key in "[a-z]{256,400}") {
        prop_assert!(IdempotencyKey::parse(key.as_bytes()).is_err());
    }

    #[test]
    fn any_bytes_parse_or_are_refused_without_panicking(raw in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = IdempotencyKey::parse(&raw);
        let _ = RideParams::parse(&raw);
    }

    #[test]
    fn field_order_and_whitespace_do_not_change_the_fingerprint(
        (body, order) in shuffled_body(), spaces in 0usize..3
    ) {
        let compact = RideParams::parse(body.to_string().as_bytes()).unwrap();
        let shuffled = RideParams::parse(render(&body, &order, spaces).as_bytes()).unwrap();
        prop_assert_eq!(fingerprint(&compact), fingerprint(&shuffled));
    }

    #[test]
    fn changing_any_field_changes_the_fingerprint(body in valid_body(), field in 0usize..8) {
        let original = RideParams::parse(body.to_string().as_bytes()).unwrap();
        let mut changed = body.clone();
        let name = ["origin_lat", "origin_lon", "target_lat", "target_lon", "amount_cents", "currency", "payment_method", "capture_method"][field];
        changed[name] = match name {
            "amount_cents" => json!(if original.amount_cents == 50 { 51 } else { original.amount_cents - 1 }),
            "currency" => json!(if original.currency == "eur" { "gbp" } else { "eur" }),
            "payment_method" => json!(format!("{}x", original.payment_method.clone().unwrap_or_else(|| "pm_".to_owned()))),
            "capture_method" => json!(if original.capture_method == CaptureMethod::Manual { "automatic" } else { "manual" }),
            coordinate => {
                let value = body[coordinate].as_f64().unwrap();
                json!(if value > 0.0 { value - 0.5 } else { value + 0.5 })
            }
        };
        let changed = RideParams::parse(changed.to_string().as_bytes()).unwrap();
        prop_assert_ne!(fingerprint(&original), fingerprint(&changed));
    }

    #[test]
    fn amounts_outside_the_range_or_not_integers_are_refused(
        amount in prop_oneof![i64::MIN..50i64, 1_000_001i64..=i64::MAX]
    ) {
        let body = json!({"origin_lat": 0, "origin_lon": 0, "target_lat": 0, "target_lon": 0, "amount_cents": amount});
        prop_assert!(RideParams::parse(body.to_string().as_bytes()).is_err());
        let fractional = body.to_string().replace(&amount.to_string(), &format!("{amount}.5"));
        prop_assert!(RideParams::parse(fractional.as_bytes()).is_err());
    }

    #[test]
    fn payment_methods_are_pm_ids_and_nothing_else(method in "\\PC{0,60}") {
        let body = json!({"origin_lat": 0, "origin_lon": 0, "target_lat": 0, "target_lon": 0, "amount_cents": 100, "payment_method": method});
        let parsed = RideParams::parse(body.to_string().as_bytes());
        let valid = method.strip_prefix("pm_").is_some_and(|rest| {
            !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        });
        prop_assert_eq!(parsed.is_ok(), valid, "{:?}", method);
        if let Ok(params) = parsed {
            prop_assert_eq!(params.payment_method.as_deref(), Some(method.as_str()));
        }
    }

    #[test]
    fn test_payment_method_ids_are_taken(suffix in "[A-Za-z0-9_]{1,60}") {
        let method = format!("pm_{suffix}");
        let body = json!({"origin_lat": 0, "origin_lon": 0, "target_lat": 0, "target_lon": 0, "amount_cents": 100, "payment_method": method});
        prop_assert_eq!(RideParams::parse(body.to_string().as_bytes()).unwrap().payment_method, Some(method));
    }
}

#[test]
fn hostile_numbers_and_spellings_are_refused() {
    let with = |lat: &str| {
        format!(
            r#"{{"origin_lat": {lat}, "origin_lon": 0, "target_lat": 0, "target_lon": 0, "amount_cents": 100}}"#
        )
    };
    for lat in [
        "NaN",
        "Infinity",
        "-Infinity",
        "1e400",
        "-1e400",
        "\"1\"",
        "null",
        "true",
        "[1]",
    ] {
        assert!(RideParams::parse(with(lat).as_bytes()).is_err(), "{lat}");
    }
    // Tiny numbers are numbers; -0 is the same place as 0.
    assert!(RideParams::parse(with("1e-300").as_bytes()).is_ok());
    assert_eq!(
        fingerprint(&RideParams::parse(with("-0").as_bytes()).unwrap()),
        fingerprint(&RideParams::parse(with("0").as_bytes()).unwrap())
    );
    for amount in ["99999999999999999999999", "1e2", "100.0", "-0.5"] {
        let body = format!(
            r#"{{"origin_lat": 0, "origin_lon": 0, "target_lat": 0, "target_lon": 0, "amount_cents": {amount}}}"#
        );
        assert!(RideParams::parse(body.as_bytes()).is_err(), "{amount}");
    }
    let duplicate = r#"{"origin_lat": 0, "origin_lat": 1, "origin_lon": 0, "target_lat": 0, "target_lon": 0, "amount_cents": 100}"#;
    assert!(RideParams::parse(duplicate.as_bytes()).is_err());
    let null_byte = r#"{"origin_lat": 0, "origin_lon": 0, "target_lat": 0, "target_lon": 0, "amount_cents": 100, "payment_method": "pm_\u0000"}"#;
    assert!(RideParams::parse(null_byte.as_bytes()).is_err());
}
