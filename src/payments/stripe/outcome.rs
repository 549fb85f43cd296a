//! What Stripe's answer, or the lack of one, means for ridepay: the mapping
//! onto `GatewayError`. Pure functions, so every branch has a unit test.

use std::io;
use std::time::Duration;

use super::wire::{ChargeObject, ErrorBody};
use crate::payments::gateway::{Charge, GatewayError};

/// An HTTP answer from Stripe, read whole.
pub struct Answer<'a> {
    pub status: u16,
    /// `Retry-After`, in seconds.
    pub retry_after: Option<Duration>,
    /// `Stripe-Should-Retry`.
    pub should_retry: Option<bool>,
    pub body: &'a [u8],
}

/// How long to wait after a 409 or a 429 that names no delay.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

pub fn classify(answer: &Answer) -> Result<Charge, GatewayError> {
    let status = answer.status;
    if (200..300).contains(&status) {
        return charged(answer.body);
    }
    let error = serde_json::from_slice::<ErrorBody>(answer.body).map(|body| body.error);
    let summary = match &error {
        Ok(error) => format!(
            "HTTP {status} {}: {}",
            error.kind,
            error.message.as_deref().unwrap_or("no message")
        ),
        Err(_) => format!("HTTP {status}, not a Stripe error body"),
    };
    let described = |prefix: &str| format!("{prefix} ({summary})");
    match status {
        401 | 403 => {
            return Err(GatewayError::Misconfigured {
                reason: described("Stripe refused STRIPE_API_KEY"),
            })
        }
        // Another request with the same key is in progress (Stripe's 409
        // `idempotency_key_in_use`): this one did nothing, and a later retry
        // gets the other's result.
        409 => {
            return Err(GatewayError::Unavailable {
                reason: described("Stripe is busy with this idempotency key"),
                retry_after: Some(answer.retry_after.unwrap_or(DEFAULT_RETRY_AFTER)),
            })
        }
        429 => {
            return Err(GatewayError::Unavailable {
                reason: described("Stripe rate-limited the charge"),
                retry_after: Some(answer.retry_after.unwrap_or(DEFAULT_RETRY_AFTER)),
            })
        }
        // Stripe may or may not have charged; the same key finds out.
        500.. => {
            return Err(GatewayError::OutcomeUnknown {
                reason: described("Stripe failed"),
            })
        }
        _ => {}
    }
    let Ok(error) = error else {
        return Err(GatewayError::Misconfigured {
            reason: described("unexpected answer from STRIPE_API_BASE"),
        });
    };
    let message = error.message.clone().unwrap_or_default();
    match error.kind.as_str() {
        "card_error" => Err(GatewayError::Declined {
            code: error.code.unwrap_or_else(|| "card_declined".to_owned()),
            decline_code: error.decline_code,
            message,
        }),
        "idempotency_error" => Err(GatewayError::Misconfigured {
            reason: described("Stripe saw an idempotency key reused with other parameters"),
        }),
        _ if answer.should_retry == Some(true) => Err(GatewayError::OutcomeUnknown {
            reason: described("Stripe asked for a retry"),
        }),
        "invalid_request_error" => Err(GatewayError::Rejected {
            message: described("Stripe rejected the charge"),
        }),
        _ => Err(GatewayError::Rejected {
            message: described("Stripe refused the charge"),
        }),
    }
}

fn charged(body: &[u8]) -> Result<Charge, GatewayError> {
    let charge: ChargeObject =
        serde_json::from_slice(body).map_err(|err| GatewayError::OutcomeUnknown {
            // A 2xx means Stripe acted; a retry with the same key replays it.
            reason: format!("unreadable charge from Stripe: {err}"),
        })?;
    if charge.status != "succeeded" {
        return Err(GatewayError::Rejected {
            message: format!("Stripe charge {} is {}", charge.id, charge.status),
        });
    }
    Ok(Charge {
        id: charge.id,
        amount_cents: charge.amount,
        currency: charge.currency,
    })
}

/// A call that got no HTTP answer. Only failures before the request left are
/// known not to have charged.
pub fn transport_failure(err: ureq::Error) -> GatewayError {
    use ureq::Timeout;
    let not_sent = |reason: String| GatewayError::Unavailable {
        reason,
        retry_after: None,
    };
    match err {
        ureq::Error::Timeout(Timeout::Resolve | Timeout::Connect) => {
            not_sent(format!("cannot reach Stripe: {err}"))
        }
        ureq::Error::HostNotFound | ureq::Error::ConnectionFailed | ureq::Error::Tls(_) => {
            not_sent(format!("cannot reach Stripe: {err}"))
        }
        ureq::Error::Rustls(_) => not_sent(format!("TLS with Stripe failed: {err}")),
        ureq::Error::Io(ref io_err)
            if matches!(
                io_err.kind(),
                io::ErrorKind::ConnectionRefused
                    | io::ErrorKind::AddrNotAvailable
                    | io::ErrorKind::NetworkUnreachable
                    | io::ErrorKind::HostUnreachable
            ) =>
        {
            not_sent(format!("cannot reach Stripe: {err}"))
        }
        other => GatewayError::OutcomeUnknown {
            reason: format!("no answer from Stripe: {other}"),
        },
    }
}
