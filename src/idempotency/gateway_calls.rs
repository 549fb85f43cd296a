//! How a key's calls to the gateway are made, fixed when the key is created
//! (its `call_version`), so that every resend of a call, by any instance of
//! any release, is the very same call.

use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::key_row::KeyState;
use super::request::Fingerprint;
use super::request::IdempotencyKey;
use crate::service_error::ServiceError;
use ridepay_gateway::HoldRequest;

/// The version new keys get.
pub const CURRENT_CALL_VERSION: i16 = 3;

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

/// How a key's gateway calls are made: what their keys are derived from,
/// and which generation of them is live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatewayCalls {
    /// What the key's gateway keys and metadata are derived from.
    pub from: RidepayKey,
    /// The key's `call_version`: 2's holds ask for increments only; 3's for
    /// overcapture and an extended authorization too, under keys of their
    /// own, so that a request of either version made again after a failover
    /// lost its row never meets the other's call under its key.
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

    /// What the key's holds ask of the card.
    pub fn hold_request(self) -> HoldRequest {
        if self.version >= 3 {
            HoldRequest::RIDE_HAILING
        } else {
            HoldRequest::INCREMENTS_ONLY
        }
    }

    /// How the calls of the key `record` holds are made. A version this
    /// release does not know (a newer release's key, met during a rolling
    /// deploy) is left alone: resent with other parameters, its calls would
    /// not be the same calls.
    pub fn of(record: &KeyState) -> Result<GatewayCalls, ServiceError> {
        let from = match (record.call_version, &record.ridepay_key) {
            (2 | 3, Some(hex_text)) => RidepayKey::parse(hex_text).ok_or_else(|| {
                anyhow::anyhow!("key {} has an unreadable ridepay_key", record.id)
            })?,
            (version, _) => {
                log::warn!(
                    "idempotency key {} is of call version {version}, unknown to this \
                     release (2 to {CURRENT_CALL_VERSION}): left to a release that knows it",
                    record.id
                );
                return Err(ServiceError::NeedsAttention);
            }
        };
        Ok(GatewayCalls {
            from,
            version: record.call_version,
            generation: record.call_generation,
        })
    }

    /// The next generation's calls.
    pub fn next_generation(self) -> GatewayCalls {
        GatewayCalls {
            generation: self.generation + 1,
            ..self
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
