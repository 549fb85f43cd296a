//! The Standard Webhooks signature: `v1,` and the base64 of the
//! HMAC-SHA256, under the secret's key, of `{webhook-id}.{webhook-timestamp}.{body}`.
//! A secret is `whsec_` and the base64 of its key. Receivers verify with
//! the specification's published libraries (the tests do, with one).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

const SECRET_PREFIX: &str = "whsec_";
/// The key's length: within the 24 to 64 bytes the specification asks.
const KEY_BYTES: usize = 32;

/// A new secret, `whsec_` and the base64 of 32 random bytes.
pub fn new_secret() -> String {
    let mut key = [0u8; KEY_BYTES];
    rand::thread_rng().fill_bytes(&mut key);
    format!("{SECRET_PREFIX}{}", STANDARD.encode(key))
}

/// The `webhook-signature` of one attempt: `v1,<base64>`.
pub fn signature(secret: &str, message_id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = secret
        .strip_prefix(SECRET_PREFIX)
        .and_then(|key| STANDARD.decode(key).ok())
        // Secrets are made by `new_secret` and checked by the table's CHECK.
        .expect("a webhook secret is whsec_ and base64");
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key");
    mac.update(message_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_whsec_and_32_random_bytes() {
        let (one, two) = (new_secret(), new_secret());
        assert_ne!(one, two);
        let key = STANDARD
            .decode(one.strip_prefix("whsec_").unwrap())
            .unwrap();
        assert_eq!(key.len(), 32);
    }

    #[test]
    fn the_signature_is_the_specifications_example() {
        // The example of the Standard Webhooks specification (spec/standard-webhooks.md).
        assert_eq!(
            signature(
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }
}
