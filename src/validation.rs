//! Field-level validation errors, shared by the service and HTTP layers.

use serde::Serialize;

/// One rejected field of a request, as it appears in a problem's `errors`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
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

/// Reads a JSON body into `T`, naming the offending field the way clients
/// expect: unknown and duplicate fields (serde refuses both), broken JSON
/// (`body`), and a mistyped field with the message `expected(field)` gives
/// (a field it does not know makes the whole body the culprit).
pub fn parse_body<T: serde::de::DeserializeOwned>(
    body: &[u8],
    expected: impl Fn(&str) -> Option<&'static str>,
) -> Result<T, FieldError> {
    let deserializer = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
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
    })
}
