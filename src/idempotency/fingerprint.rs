//! The request fingerprint that tells a retry from a different request reusing
//! the same key.

use sha2::{Digest, Sha256};

/// The version of the canonical form. A later release that changes the
/// canonical form adds a version and keeps computing the older ones, so keys
/// stored before the upgrade still match their retries. Version 2: rides pay
/// through PaymentIntents (`payment_method` and `capture_method` where
/// version 1 had `payment_source`).
pub const CURRENT_VERSION: u32 = 2;

/// A request's canonical form under an earlier version; `None` when no
/// request of that version could have been this one.
pub type EarlierForm<'a> = &'a dyn Fn(u32) -> Option<Vec<u8>>;

/// `v<version>:<hex sha-256>` over the version, method, path as sent, and the
/// canonical (validated, defaults applied) request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint(String);

impl Fingerprint {
    pub fn compute(method: &str, path: &str, canonical_request: &[u8]) -> Self {
        let digest = digest(CURRENT_VERSION, method, path, canonical_request);
        Fingerprint(format!("v{CURRENT_VERSION}:{}", hex::encode(digest)))
    }

    /// Whether `stored` (a fingerprint of an earlier request) names this same
    /// request, computed the way `stored` was: over `canonical`, or for a
    /// fingerprint of an earlier version over the form `earlier` gives. Every
    /// retry asks, so the digest is compared in a stack buffer rather than as
    /// a new string.
    pub fn matches_stored(
        method: &str,
        path: &str,
        canonical: &[u8],
        earlier: EarlierForm<'_>,
        stored: &str,
    ) -> bool {
        let Some((version, stored_hex)) = stored
            .strip_prefix('v')
            .and_then(|rest| rest.split_once(':'))
            .and_then(|(version, hex)| Some((version.parse::<u32>().ok()?, hex)))
        else {
            return false;
        };
        if !(1..=CURRENT_VERSION).contains(&version) {
            return false;
        }
        let earlier_form;
        let canonical = if version == CURRENT_VERSION {
            canonical
        } else {
            match earlier(version) {
                Some(form) => {
                    earlier_form = form;
                    &earlier_form[..]
                }
                None => return false,
            }
        };
        let mut computed = [0u8; 64];
        hex::encode_to_slice(digest(version, method, path, canonical), &mut computed)
            .expect("64 hex digits hold a SHA-256");
        computed.as_slice() == stored_hex.as_bytes()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// SHA-256 over the parts, each after its length, so no two different
/// requests concatenate to the same bytes.
fn digest(version: u32, method: &str, path: &str, canonical: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in [
        format!("ridepay-fingerprint-v{version}").as_bytes(),
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

    fn never(_: u32) -> Option<Vec<u8>> {
        None
    }

    #[test]
    fn stored_fingerprints_match_by_their_own_version() {
        let stored = Fingerprint::compute("POST", "/things", b"{}");
        let matches = |canonical: &[u8], earlier: EarlierForm<'_>, stored: &str| {
            Fingerprint::matches_stored("POST", "/things", canonical, earlier, stored)
        };
        assert!(matches(b"{}", &never, stored.as_str()));
        assert!(!matches(b"{ }", &never, stored.as_str()));
        assert!(!matches(b"{}", &never, "v9:00"));
        assert!(!matches(b"{}", &never, "garbage"));
        // A version 1 fingerprint is compared with the request's version 1 form.
        let old = format!("v1:{}", hex::encode(digest(1, "POST", "/things", b"old")));
        assert!(matches(
            b"new",
            &|v| (v == 1).then(|| b"old".to_vec()),
            &old
        ));
        assert!(!matches(
            b"new",
            &|v| (v == 1).then(|| b"new".to_vec()),
            &old
        ));
        assert!(!matches(b"old", &never, &old));
    }
}
