//! The request fingerprint that tells a retry from a different request reusing
//! the same key.

use sha2::{Digest, Sha256};

/// The version of the canonical form. A later release that changes the
/// canonical form adds a version and keeps computing the older ones, so keys
/// stored before the upgrade still match their retries.
const CURRENT_VERSION: u32 = 1;

/// `v<version>:<hex sha-256>` over the version, method, path as sent, and the
/// canonical (validated, defaults applied) request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint(String);

impl Fingerprint {
    pub fn compute(method: &str, path: &str, canonical_request: &[u8]) -> Self {
        Self::compute_version(CURRENT_VERSION, method, path, canonical_request)
    }

    fn compute_version(version: u32, method: &str, path: &str, canonical: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        // Lengths before each part, so no two different requests concatenate to
        // the same bytes.
        for part in [
            format!("ridepay-fingerprint-v{version}").as_bytes(),
            method.as_bytes(),
            path.as_bytes(),
            canonical,
        ] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part);
        }
        Fingerprint(format!("v{version}:{}", hex::encode(hasher.finalize())))
    }

    /// Whether `stored` (a fingerprint of an earlier request) names this same
    /// request, computed the way `stored` was.
    pub fn matches_stored(method: &str, path: &str, canonical: &[u8], stored: &str) -> bool {
        let version = stored
            .strip_prefix('v')
            .and_then(|rest| rest.split_once(':'))
            .and_then(|(version, _)| version.parse::<u32>().ok());
        match version {
            Some(version @ 1..=CURRENT_VERSION) => {
                Self::compute_version(version, method, path, canonical).0 == stored
            }
            _ => false,
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_versioned_hex_sha256() {
        let fingerprint = Fingerprint::compute("POST", "/api/rides", b"{}");
        assert!(fingerprint.as_str().starts_with("v1:"));
        assert_eq!(fingerprint.as_str().len(), 3 + 64);
    }

    #[test]
    fn each_part_changes_the_fingerprint() {
        let base = Fingerprint::compute("POST", "/api/rides", b"{\"a\":1}");
        assert_ne!(
            base,
            Fingerprint::compute("PUT", "/api/rides", b"{\"a\":1}")
        );
        assert_ne!(
            base,
            Fingerprint::compute("POST", "/api/rides/1", b"{\"a\":1}")
        );
        assert_ne!(
            base,
            Fingerprint::compute("POST", "/api/rides", b"{\"a\":2}")
        );
        // Moving bytes between parts is a different request too.
        assert_ne!(
            Fingerprint::compute("POST", "/a", b"b"),
            Fingerprint::compute("POST", "/", b"ab")
        );
    }

    #[test]
    fn stored_fingerprints_match_by_their_own_version() {
        let stored = Fingerprint::compute("POST", "/api/rides", b"{}");
        assert!(Fingerprint::matches_stored(
            "POST",
            "/api/rides",
            b"{}",
            stored.as_str()
        ));
        assert!(!Fingerprint::matches_stored(
            "POST",
            "/api/rides",
            b"{ }",
            stored.as_str()
        ));
        assert!(!Fingerprint::matches_stored(
            "POST",
            "/api/rides",
            b"{}",
            "v9:00"
        ));
        assert!(!Fingerprint::matches_stored(
            "POST",
            "/api/rides",
            b"{}",
            "garbage"
        ));
    }
}
