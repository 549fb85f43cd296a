//! The request as a key row records it: the client's `Idempotency-Key`,
//! parsed once into a value that is always valid; the request's canonical
//! form (what the fingerprint hashes, and what the completer finishes the
//! request from); the fingerprint that tells a retry from a different
//! request reusing the same key; and how the key's calls to the gateway are
//! made, fixed when the key is created (its call version and its
//! `ridepay_key`), so that every resend of a call, by any instance of any
//! release, is the very same call.

use std::fmt;
use std::io::Write;

use diesel::pg::Pg;
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::Jsonb;
use diesel::AsExpression;
use serde::Serialize;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::key_row::JSONB_FORMAT_VERSION;

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

#[derive(Debug, Clone, PartialEq, Eq, AsExpression)]
#[diesel(sql_type = Jsonb)]
pub struct CanonicalRequest(Vec<u8>);

impl CanonicalRequest {
    /// `params` serialised straight to bytes, which every request on a key
    /// pays, replays included. That is canonical only when `T` declares its
    /// fields in sorted order (the order a `serde_json::Value` map keeps): debug
    /// builds, and so every test, check it against the form built through a
    /// `Value`.
    pub fn of<T: Serialize>(params: &T) -> Self {
        let bytes = serde_json::to_vec(params).expect("request params always serialise");
        debug_assert_eq!(
            bytes,
            serde_json::to_vec(&serde_json::to_value(params).expect("params serialise"))
                .expect("a JSON value always serialises"),
            "{} must declare its fields in sorted order",
            std::any::type_name::<T>()
        );
        CanonicalRequest(bytes)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Stored as it is: the bytes are JSON already, so no `Value` is built.
impl ToSql<Jsonb, Pg> for CanonicalRequest {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        out.write_all(&[JSONB_FORMAT_VERSION])?;
        out.write_all(&self.0)?;
        Ok(IsNull::No)
    }
}

/// The version of the canonical form, a tag every fingerprint starts with,
/// so that a later release can change the form and still tell the
/// fingerprints of the one before. Version 2: rides pay through
/// PaymentIntents (`payment_method` and `capture_method`). Fingerprints of
/// version 1 are retired: a migration refuses to run while a key has one.
pub(super) const VERSION: &str = "v2";

/// `v<version>:<hex sha-256>` over the version, method, path as sent, and the
/// canonical (validated, defaults applied) request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint(String);

impl Fingerprint {
    pub fn compute(method: &str, path: &str, canonical_request: &[u8]) -> Self {
        let digest = digest(VERSION, method, path, canonical_request);
        Fingerprint(format!("{VERSION}:{}", hex::encode(digest)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// SHA-256 over the parts, each after its length, so no two different
/// requests concatenate to the same bytes.
pub(super) fn digest(version: &str, method: &str, path: &str, canonical: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in [
        format!("ridepay-fingerprint-{version}").as_bytes(),
        method.as_bytes(),
        path.as_bytes(),
        canonical,
    ] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// The version new keys get.
pub const CURRENT_CALL_VERSION: i16 = 4;

/// A hash of what the client sent, in this installation: the installation
/// id, the user's random public id, the client's `Idempotency-Key` and the
/// request's fingerprint. Nothing the database assigns goes in, so a key row
/// lost at a failover and made again by the client's retry has the same
/// one. Sent to the gateway (hex) as the `ridepay_key` metadata, from which
/// events and reconciliation find the key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RidepayKey([u8; 32]);

impl RidepayKey {
    pub fn of(
        installation: Uuid,
        user_public_id: Uuid,
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
    ) -> RidepayKey {
        let mut hash = Sha256::new();
        hash.update(b"ridepay-key-v2\0");
        hash.update(installation.as_bytes());
        hash.update(user_public_id.as_bytes());
        // Both variable-length fields are length-prefixed, so no two
        // requests hash the same bytes.
        for field in [key.as_str(), fingerprint.as_str()] {
            hash.update((field.len() as u64).to_be_bytes());
            hash.update(field.as_bytes());
        }
        RidepayKey(hash.finalize().into())
    }

    pub fn parse(hex_text: &str) -> Option<RidepayKey> {
        let mut bytes = [0; 32];
        hex::decode_to_slice(hex_text, &mut bytes).ok()?;
        Some(RidepayKey(bytes))
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    pub fn to_hex(self) -> String {
        hex::encode(self.0)
    }
}

impl std::fmt::Debug for RidepayKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RidepayKey({})", self.to_hex())
    }
}

/// How a key's gateway calls are made: what their keys are derived from,
/// and which generation of them is live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatewayCalls {
    /// What the key's gateway keys and metadata are derived from.
    pub from: RidepayKey,
    /// The key's `call_version`, which fixes what its calls send
    /// (`call_versions.rs`), each version's under keys of its own, so that
    /// a request of one version made again after a failover lost its row
    /// never meets another's call under its key.
    pub version: i16,
    /// 0 at first; one more each time reconciliation proved that a call
    /// answered by a failure the gateway saved under its key made nothing,
    /// and sends it again under a new key.
    pub generation: i16,
}

impl GatewayCalls {
    /// The first generation of calls derived from `from`, as new keys make
    /// them.
    pub fn first(from: RidepayKey) -> GatewayCalls {
        GatewayCalls {
            from,
            version: CURRENT_CALL_VERSION,
            generation: 0,
        }
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

    #[derive(Serialize)]
    struct Sorted {
        amount: i64,
        note: Option<String>,
        zone: f64,
    }

    #[cfg(debug_assertions)]
    #[derive(Serialize)]
    struct Unsorted {
        zone: f64,
        amount: i64,
    }

    #[test]
    fn is_the_json_of_the_params() {
        let canonical = CanonicalRequest::of(&Sorted {
            amount: 5,
            note: None,
            zone: -0.5,
        });
        assert_eq!(
            canonical.as_bytes(),
            br#"{"amount":5,"note":null,"zone":-0.5}"#
        );
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "must declare its fields in sorted order")]
    fn refuses_params_whose_fields_are_not_sorted() {
        CanonicalRequest::of(&Unsorted {
            zone: 1.0,
            amount: 2,
        });
    }

    #[test]
    fn is_versioned_hex_sha256() {
        let fingerprint = Fingerprint::compute("POST", "/things", b"{}");
        assert!(fingerprint.as_str().starts_with("v2:"));
        assert_eq!(fingerprint.as_str().len(), 3 + 64);
    }

    #[test]
    fn each_part_changes_the_fingerprint() {
        let base = Fingerprint::compute("POST", "/things", b"{\"a\":1}");
        assert_ne!(base, Fingerprint::compute("PUT", "/things", b"{\"a\":1}"));
        assert_ne!(
            base,
            Fingerprint::compute("POST", "/things/1", b"{\"a\":1}")
        );
        assert_ne!(base, Fingerprint::compute("POST", "/things", b"{\"a\":2}"));
        // Moving bytes between parts is a different request too.
        assert_ne!(
            Fingerprint::compute("POST", "/a", b"b"),
            Fingerprint::compute("POST", "/", b"ab")
        );
    }

    #[test]
    fn the_ridepay_key_depends_on_each_part_and_on_nothing_else() {
        let key = |text: &str| IdempotencyKey::parse(text.as_bytes()).unwrap();
        let print = |body: &[u8]| Fingerprint::compute("POST", "/things", body);
        let (one, two) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let base = RidepayKey::of(one, one, &key("k"), &print(b"{}"));
        assert_eq!(base, RidepayKey::of(one, one, &key("k"), &print(b"{}")));
        for other in [
            RidepayKey::of(two, one, &key("k"), &print(b"{}")),
            RidepayKey::of(one, two, &key("k"), &print(b"{}")),
            RidepayKey::of(one, one, &key("k2"), &print(b"{}")),
            RidepayKey::of(one, one, &key("k"), &print(b"{\"a\":1}")),
        ] {
            assert_ne!(base, other);
        }
        assert_eq!(RidepayKey::parse(&base.to_hex()), Some(base));
        assert_eq!(RidepayKey::parse("zz"), None);
    }
}
