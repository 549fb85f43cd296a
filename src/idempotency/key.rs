//! The `Idempotency-Key` header, parsed once into a value that is always valid.

use std::fmt;

/// A client's idempotency key, stored unquoted.
///
/// Accepted bare (`abc-123`) or as an RFC 8941 string (`"abc-123"`); both name
/// the same key. Unquoted it is 1 to 255 printable ASCII characters, not blank.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the key is empty or blank")]
    Blank,
    #[error("the key is longer than 255 characters")]
    TooLong,
    #[error("the key may hold only printable ASCII characters")]
    NotPrintable,
    #[error("the quoted key is not a valid RFC 8941 string")]
    BadQuoting,
}

const MAX_LEN: usize = 255;

impl IdempotencyKey {
    pub fn parse(raw: &[u8]) -> Result<Self, KeyError> {
        let unquoted = match raw {
            [b'"', inner @ .., b'"'] if !inner.is_empty() || raw.len() == 2 => unquote(inner)?,
            [b'"', ..] => return Err(KeyError::BadQuoting),
            bare => bare.to_vec(),
        };
        if unquoted.iter().any(|byte| !(0x20..=0x7e).contains(byte)) {
            return Err(KeyError::NotPrintable);
        }
        if unquoted.iter().all(|byte| *byte == b' ') {
            return Err(KeyError::Blank);
        }
        if unquoted.len() > MAX_LEN {
            return Err(KeyError::TooLong);
        }
        Ok(IdempotencyKey(
            String::from_utf8(unquoted).expect("printable ASCII is UTF-8"),
        ))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The inside of an RFC 8941 sf-string: `\"` and `\\` are the only escapes, and
/// a bare `"` or `\` is not allowed.
fn unquote(inner: &[u8]) -> Result<Vec<u8>, KeyError> {
    let mut out = Vec::with_capacity(inner.len());
    let mut bytes = inner.iter();
    while let Some(&byte) = bytes.next() {
        match byte {
            b'\\' => match bytes.next() {
                Some(&escaped @ (b'"' | b'\\')) => out.push(escaped),
                _ => return Err(KeyError::BadQuoting),
            },
            b'"' => return Err(KeyError::BadQuoting),
            other => out.push(other),
        }
    }
    Ok(out)
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_and_quoted_forms_name_the_same_key() {
        assert_eq!(
            IdempotencyKey::parse(b"abc-123"),
            IdempotencyKey::parse(b"\"abc-123\"")
        );
        assert_eq!(
            IdempotencyKey::parse(b"abc-123").unwrap().as_str(),
            "abc-123"
        );
    }

    #[test]
    fn quoted_escapes_are_decoded() {
        let key = IdempotencyKey::parse(br#""a\"b\\c""#).unwrap();
        assert_eq!(key.as_str(), r#"a"b\c"#);
    }

    #[test]
    fn malformed_quoting_is_rejected() {
        for raw in [&br#""abc"#[..], br#""a"b""#, br#""a\b""#, br#""abc\""#] {
            assert_eq!(
                IdempotencyKey::parse(raw),
                Err(KeyError::BadQuoting),
                "{raw:?}"
            );
        }
    }

    #[test]
    fn blank_and_empty_keys_are_rejected() {
        for raw in [&b""[..], b"   ", b"\"\"", b"\"  \""] {
            assert_eq!(IdempotencyKey::parse(raw), Err(KeyError::Blank), "{raw:?}");
        }
    }

    #[test]
    fn length_is_counted_unquoted() {
        let max = "k".repeat(255);
        assert!(IdempotencyKey::parse(max.as_bytes()).is_ok());
        assert!(IdempotencyKey::parse(format!("\"{max}\"").as_bytes()).is_ok());
        let over = "k".repeat(256);
        assert_eq!(
            IdempotencyKey::parse(over.as_bytes()),
            Err(KeyError::TooLong)
        );
    }

    #[test]
    fn control_and_non_ascii_characters_are_rejected() {
        for raw in [&b"a\tb"[..], b"a\x7fb", "clé".as_bytes(), b"\"a\x01\""] {
            assert_eq!(
                IdempotencyKey::parse(raw),
                Err(KeyError::NotPrintable),
                "{raw:?}"
            );
        }
    }
}
