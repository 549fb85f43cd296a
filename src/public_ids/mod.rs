//! The ids the API hands out: a prefix naming the kind (`ride_`) and 18
//! bytes in lowercase base32 (`encoding`); integer keys stay inside the
//! database. A row a request makes gets an id derived from the request
//! (HMAC-SHA256 under the installation's secret over the request's ridepay
//! key, the kind and an ordinal): made again after a failover lost it, the
//! row gets the same id, so an id names its row or nothing, never another.
//! Other rows get random ids.

mod encoding;
pub mod paths;

use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretBox};
use sha2::Sha256;

pub use encoding::{DeliveryPublicId, DestinationPublicId, PublicId, RefundPublicId, RidePublicId};
pub use encoding::{DriverPublicId, LedgerTransactionPublicId};
pub(crate) use paths::named;
pub use paths::PathId;

/// The installation's secret that derived ids are made under: made once by
/// the database (`installation.id_secret`), read at start-up, never sent
/// anywhere nor logged. Without it, no one can tell a request's ids from
/// the gateway metadata that names the request.
pub struct IdSecret(SecretBox<[u8; 32]>);

impl IdSecret {
    pub fn new(secret: [u8; 32]) -> IdSecret {
        IdSecret(SecretBox::new(Box::new(secret)))
    }

    /// The id of the row of kind `T` numbered `ordinal` among those of its
    /// kind that the request of `ridepay_key` makes: the first 18 bytes of
    /// HMAC-SHA256(secret, ridepay key ‖ prefix ‖ ordinal as 4 bytes, big
    /// endian).
    pub fn derive<T: PublicId>(&self, ridepay_key: &[u8; 32], ordinal: u32) -> T {
        let mut mac = <Hmac<Sha256>>::new_from_slice(self.0.expose_secret())
            .expect("HMAC takes a key of any length");
        mac.update(ridepay_key);
        mac.update(T::PREFIX.as_bytes());
        mac.update(&ordinal.to_be_bytes());
        let digest = mac.finalize().into_bytes();
        let mut body = [0; encoding::BODY_BYTES];
        body.copy_from_slice(&digest[..encoding::BODY_BYTES]);
        T::from_body(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_ids_differ_by_request_kind_and_ordinal_and_secret() {
        let secret = |byte| IdSecret::new([byte; 32]);
        let (one, other) = (secret(1), secret(2));
        let request = [3; 32];
        let ride: RidePublicId = one.derive(&request, 0);
        assert_eq!(ride, one.derive(&request, 0));
        let refund: RefundPublicId = one.derive(&request, 0);
        let bodies = [
            *ride.body(),
            *refund.body(),
            *one.derive::<RidePublicId>(&request, 1).body(),
            *one.derive::<RidePublicId>(&[4; 32], 0).body(),
            *other.derive::<RidePublicId>(&request, 0).body(),
        ];
        for (i, a) in bodies.iter().enumerate() {
            for b in &bodies[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
