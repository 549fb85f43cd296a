//! Stripe's webhook signatures: `Stripe-Signature: t=<unix time>,v1=<hex>`,
//! where each `v1` is HMAC-SHA256 of `"{t}.{raw body}"` under the endpoint's
//! signing secret. ridepay verifies them; the fake gateway makes them.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Why a signature is refused. Deliberately coarse: the sender learns
/// nothing about which part was wrong beyond this.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the Stripe-Signature header is missing or malformed")]
    Malformed,
    #[error("the signature's timestamp is outside the tolerance")]
    Stale,
    #[error("no v1 signature matches the payload")]
    Mismatch,
}

fn mac(secret: &str, timestamp: i64, payload: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    mac
}

/// The `Stripe-Signature` header for `payload` sent at `timestamp`.
pub fn sign(secret: &str, timestamp: i64, payload: &[u8]) -> String {
    let signature = mac(secret, timestamp, payload).finalize().into_bytes();
    format!("t={timestamp},v1={}", hex::encode(signature))
}

/// Checks `header` as Stripe documents: one `t`, any number of `v1` (one per
/// active secret while a secret is rolled), a timestamp within `tolerance_secs`
/// of `now`, and a constant-time comparison. Other schemes (`v0`) are ignored.
pub fn verify(
    header: &str,
    payload: &[u8],
    secret: &str,
    now: i64,
    tolerance_secs: i64,
) -> Result<(), SignatureError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        let (name, value) = part
            .trim()
            .split_once('=')
            .ok_or(SignatureError::Malformed)?;
        match name {
            "t" if timestamp.is_none() => {
                timestamp = Some(
                    value
                        .parse::<i64>()
                        .map_err(|_| SignatureError::Malformed)?,
                )
            }
            "t" => return Err(SignatureError::Malformed),
            // A v1 that is not hex can never match; it is skipped, not fatal.
            "v1" => signatures.extend(hex::decode(value).ok()),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    // Any i64 may arrive: a difference that does not fit is stale, not a panic.
    if now.abs_diff(timestamp) > tolerance_secs.unsigned_abs() {
        return Err(SignatureError::Stale);
    }
    let expected = mac(secret, timestamp, payload);
    if signatures
        .iter()
        .any(|signature| expected.clone().verify_slice(signature).is_ok())
    {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test";
    const BODY: &[u8] = br#"{"id":"evt_1"}"#;

    #[test]
    fn a_signature_made_here_verifies() {
        let header = sign(SECRET, 1_000, BODY);
        assert_eq!(verify(&header, BODY, SECRET, 1_100, 300), Ok(()));
    }

    #[test]
    fn the_signature_is_hmac_sha256_of_timestamp_dot_payload() {
        // Computed apart (Python's hmac) for this secret, time and body.
        assert_eq!(
            sign(SECRET, 1_000, BODY),
            "t=1000,v1=387e46d34ab34bb0f3624adcaa371a0332240720155daad95713dfea27253ccd"
        );
    }

    #[test]
    fn any_of_several_v1_signatures_may_match() {
        let good = sign(SECRET, 1_000, BODY);
        let other = sign("whsec_old", 1_000, BODY);
        let (_, old_v1) = other.split_once(',').unwrap();
        let (t, good_v1) = good.split_once(',').unwrap();
        let header = format!("{t},{old_v1},{good_v1},v0=abc");
        assert_eq!(verify(&header, BODY, SECRET, 1_000, 300), Ok(()));
    }

    #[test]
    fn wrong_secret_altered_body_and_old_timestamps_are_refused() {
        let header = sign(SECRET, 1_000, BODY);
        assert_eq!(
            verify(&header, BODY, "whsec_other", 1_000, 300),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(&header, br#"{"id":"evt_2"}"#, SECRET, 1_000, 300),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(&header, BODY, SECRET, 1_301, 300),
            Err(SignatureError::Stale)
        );
        for far_off in [i64::MIN, i64::MIN + 1_000, i64::MAX] {
            let header = sign(SECRET, far_off, BODY);
            assert_eq!(
                verify(&header, BODY, SECRET, 1_000, 300),
                Err(SignatureError::Stale),
                "{far_off}"
            );
        }
        for malformed in [
            "",
            "t=1000",
            "v1=00",
            "t=x,v1=00",
            "t=1,t=2,v1=00",
            "garbage",
        ] {
            assert_eq!(
                verify(malformed, BODY, SECRET, 1_000, 300),
                Err(SignatureError::Malformed),
                "{malformed}"
            );
        }
    }
}
