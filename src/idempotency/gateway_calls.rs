//! How a key's calls to the gateway are made, fixed when the key is created
//! (its `call_version`), so that every resend of a call, by any instance of
//! any release, is the very same call.

use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::fingerprint::Fingerprint;
use super::key::IdempotencyKey;
use super::record::KeyState;
use crate::ids::KeyId;
use crate::service_error::ServiceError;

/// The version new keys get.
pub const CURRENT_CALL_VERSION: i16 = 2;

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

    pub fn to_hex(self) -> String {
        hex::encode(self.0)
    }
}

impl std::fmt::Debug for RidepayKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RidepayKey({})", self.to_hex())
    }
}

/// What a key's gateway calls are derived from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatewayCalls {
    /// Version 1, keys made before version 2: from the key row's id, with
    /// metadata naming the rows.
    ByRowId(KeyId),
    /// Version 2: from the request's `RidepayKey`, with metadata naming it.
    ByRequest(RidepayKey),
}

impl GatewayCalls {
    /// How the calls of the key `record` holds are made. A version this
    /// release does not know (a newer release's key, met during a rolling
    /// deploy) is left alone: resent with other parameters, its calls would
    /// not be the same calls.
    pub fn of(record: &KeyState) -> Result<GatewayCalls, ServiceError> {
        match (record.call_version, &record.ridepay_key) {
            (1, _) => Ok(GatewayCalls::ByRowId(record.id)),
            (2, Some(hex_text)) => RidepayKey::parse(hex_text)
                .map(GatewayCalls::ByRequest)
                .ok_or_else(|| {
                    anyhow::anyhow!("key {} has an unreadable ridepay_key", record.id).into()
                }),
            (version, _) => {
                log::warn!(
                    "idempotency key {} is of call version {version}, unknown to this \
                     release (at most {CURRENT_CALL_VERSION}): left to a release that knows it",
                    record.id
                );
                Err(ServiceError::NeedsAttention)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
