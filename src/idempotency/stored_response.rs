//! The response stored with a finished key and replayed byte for byte.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    pub status: u16,
    /// In the order they were sent (`Content-Type`, `Location`, ...).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl StoredResponse {
    /// A 201 with a JSON body and the `Location` of what was created.
    pub fn created(location: String, body: Vec<u8>) -> Self {
        StoredResponse {
            status: 201,
            headers: vec![
                ("Content-Type".to_owned(), "application/json".to_owned()),
                ("Location".to_owned(), location),
            ],
            body,
        }
    }

    /// The headers as stored: an ordered JSON array of `[name, value]` pairs.
    pub(crate) fn headers_json(&self) -> Value {
        Value::Array(
            self.headers
                .iter()
                .map(|(name, value)| Value::from(vec![name.as_str(), value.as_str()]))
                .collect(),
        )
    }

    /// Rebuilds a stored response; None when the row holds something this code
    /// never writes.
    pub(crate) fn from_stored(status: i16, headers: &Value, body: Vec<u8>) -> Option<Self> {
        let headers = headers
            .as_array()?
            .iter()
            .map(|pair| match pair.as_array()?.as_slice() {
                [Value::String(name), Value::String(value)] => Some((name.clone(), value.clone())),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(StoredResponse {
            status: u16::try_from(status).ok()?,
            headers,
            body,
        })
    }
}
