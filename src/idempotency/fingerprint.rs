//! The request fingerprint that tells a retry from a different request reusing
//! the same key.

use sha2::{Digest, Sha256};

/// The version of the canonical form, a tag every fingerprint starts with,
/// so that a later release can change the form and still tell the
/// fingerprints of the one before. Version 2: rides pay through
/// PaymentIntents (`payment_method` and `capture_method`). Fingerprints of
/// version 1 are retired: a migration refuses to run while a key has one.
const VERSION: &str = "v2";

/// `v<version>:<hex sha-256>` over the version, method, path as sent, and the
/// canonical (validated, defaults applied) request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint(String);

impl Fingerprint {
    pub fn compute(method: &str, path: &str, canonical_request: &[u8]) -> Self {
        let digest = digest(VERSION, method, path, canonical_request);
        Fingerprint(format!("{VERSION}:{}", hex::encode(digest)))
    }

    /// Whether `stored` (a fingerprint of an earlier request) names this same
    /// request. Every retry asks, so the digest is compared in a stack
    /// buffer rather than as a new string.
    pub fn matches_stored(method: &str, path: &str, canonical: &[u8], stored: &str) -> bool {
        let Some(stored_hex) = stored
            .strip_prefix(VERSION)
            .and_then(|rest| rest.strip_prefix(':'))
        else {
            return false;
        };
        let mut computed = [0u8; 64];
        hex::encode_to_slice(digest(VERSION, method, path, canonical), &mut computed)
            .expect("64 hex digits hold a SHA-256");
        computed.as_slice() == stored_hex.as_bytes()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// SHA-256 over the parts, each after its length, so no two different
/// requests concatenate to the same bytes.
fn digest(version: &str, method: &str, path: &str, canonical: &[u8]) -> [u8; 32] {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_stored_fingerprint_matches_only_the_same_request_of_this_version() {
        let stored = Fingerprint::compute("POST", "/things", b"{}");
        let matches = |canonical: &[u8], stored: &str| {
            Fingerprint::matches_stored("POST", "/things", canonical, stored)
        };
        assert!(matches(b"{}", stored.as_str()));
        assert!(!matches(b"{ }", stored.as_str()));
        assert!(!matches(b"{}", "v9:00"));
        assert!(!matches(b"{}", "garbage"));
        let version_1 = format!("v1:{}", hex::encode(digest("v1", "POST", "/things", b"{}")));
        assert!(!matches(b"{}", &version_1));
    }
}
