//! Field-level validation errors, shared by the service and HTTP layers.

use serde::Serialize;

/// One rejected field of a request, as it appears in a problem's `errors`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Reads a JSON object into `T`, naming the offending field the way clients
/// expect: unknown and duplicate fields (serde refuses both), anything but an
/// object, broken JSON or anything after the object (`body`), and a mistyped
/// field with the message `expected(field)` gives (a field it does not know
/// makes the whole body the culprit).
pub fn parse_body<T: serde::de::DeserializeOwned>(
    body: &[u8],
    expected: impl Fn(&str) -> Option<&'static str>,
) -> Result<T, FieldError> {
    // serde would fill a struct from an array too, field by field in order.
    if body.iter().find(|byte| !byte.is_ascii_whitespace()) != Some(&b'{') {
        return Err(FieldError::new("body", "must be a JSON object"));
    }
    // Tracking the path costs every request; only a refusal needs it.
    serde_json::from_slice(body).map_err(|err| explain::<T>(body, err, expected))
}

/// Why `body` is not a `T`, reading it again with the path tracked.
fn explain<T: serde::de::DeserializeOwned>(
    body: &[u8],
    err: serde_json::Error,
    expected: impl Fn(&str) -> Option<&'static str>,
) -> FieldError {
    let deserializer = &mut serde_json::Deserializer::from_slice(body);
    match serde_path_to_error::deserialize::<_, T>(deserializer) {
        // The value itself is fine: what follows it is not.
        Ok(_) => FieldError::new("body", format!("is not valid JSON: {err}")),
        Err(err) => field_error(err, expected),
    }
}

fn field_error(
    err: serde_path_to_error::Error<serde_json::Error>,
    expected: impl Fn(&str) -> Option<&'static str>,
) -> FieldError {
    let inner = err.inner();
    let path = err.path().to_string();
    let message = inner.to_string();
    // serde names unknown and duplicate fields in backticks at the root.
    if let Some(field) = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("duplicate field `"))
        .and_then(|rest| rest.split('`').next())
    {
        let what = if message.starts_with("unknown") {
            "is not a known field"
        } else {
            "appears more than once"
        };
        return FieldError::new(field, what);
    }
    if inner.is_syntax() || inner.is_eof() {
        return FieldError::new("body", format!("is not valid JSON: {inner}"));
    }
    match expected(&path) {
        Some(what) => FieldError::new(path, what),
        None => FieldError::new("body", "must be a JSON object"),
    }
}

/// A payment method id as Stripe makes them (`pm_` and a few dozen
/// letters and digits; test ids such as `pm_card_visa` have `_` too). The
/// same rule as the CHECK on `users.stripe_payment_method_id`.
pub fn is_payment_method_id(text: &str) -> bool {
    text.strip_prefix("pm_").is_some_and(|rest| {
        (1..=252).contains(&rest.len())
            && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Body {
        #[allow(dead_code)]
        amount: i64,
    }

    fn parse(body: &str) -> Result<Body, FieldError> {
        parse_body(body.as_bytes(), |field| {
            (field == "amount").then_some("must be an integer")
        })
    }

    #[test]
    fn anything_after_the_value_is_refused() {
        assert!(parse(" {\"amount\": 1}\n").is_ok());
        for body in [r#"{"amount": 1} x"#, r#"{"amount": 1}{"amount": 1}"#] {
            let err = parse(body).unwrap_err();
            assert_eq!(err.field, "body");
            assert!(err.message.starts_with("is not valid JSON"), "{err:?}");
        }
    }

    #[test]
    fn a_refusal_names_the_field() {
        assert_eq!(
            parse(r#"{"amount": "1"}"#).unwrap_err(),
            FieldError::new("amount", "must be an integer")
        );
        assert_eq!(
            parse(r#"{"amount": 1, "other": 2}"#).unwrap_err(),
            FieldError::new("other", "is not a known field")
        );
        for body in ["[1]", "1", "", "null"] {
            assert_eq!(
                parse(body).unwrap_err(),
                FieldError::new("body", "must be a JSON object")
            );
        }
    }
}
