//! What Stripe's answer, or the lack of one, means for ridepay: the mapping
//! onto `GatewayError`. Pure functions, so every branch has a unit test.

use std::io;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::wire::{ErrorBody, ListObject};
use ridepay_gateway::GatewayError;

/// An HTTP answer from Stripe, read whole.
pub struct Answer<'a> {
    pub status: u16,
    /// `Retry-After`, in seconds.
    pub retry_after: Option<Duration>,
    /// `Stripe-Should-Retry`.
    pub should_retry: Option<bool>,
    /// `Idempotent-Replayed: true`: Stripe answered from what it saved under
    /// the key, not by acting again.
    pub replayed: bool,
    /// `Request-Id`, named in every failure so an operator can find the
    /// request in Stripe's dashboard.
    pub request_id: Option<String>,
    pub body: &'a [u8],
}

/// How long to wait after a 409 or a 429 that names no delay.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// What an answer means, with `accepted` reading a 2xx body.
pub fn classify<T>(
    answer: &Answer,
    accepted: impl FnOnce(&[u8]) -> Result<T, GatewayError>,
) -> Result<T, GatewayError> {
    let status = answer.status;
    if (200..300).contains(&status) {
        return accepted(answer.body);
    }
    let error = serde_json::from_slice::<ErrorBody>(answer.body).map(|body| body.error);
    // The code in the words too: what tells some refusals from others
    // (`GatewayError::is_balance_insufficient`).
    let summary = match &error {
        Ok(error) => format!(
            "HTTP {status} {}{}: {}",
            error.kind,
            error
                .code
                .as_deref()
                .map(|code| format!(" ({code})"))
                .unwrap_or_default(),
            error.message.as_deref().unwrap_or("no message")
        ),
        Err(_) => format!("HTTP {status}, not a Stripe error body"),
    };
    let request = answer
        .request_id
        .as_deref()
        .map(|id| format!(", Stripe request {id}"))
        .unwrap_or_default();
    let described = |prefix: &str| format!("{prefix} ({summary}{request})");
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
                reason: described("Stripe rate-limited the request"),
                retry_after: Some(answer.retry_after.unwrap_or(DEFAULT_RETRY_AFTER)),
            })
        }
        // Stripe saved a failure under this key and will answer it to every
        // retry (for 24 hours): no retry can learn what happened, and
        // reconciliation finds out by listing what Stripe made.
        500.. if answer.replayed => {
            return Err(GatewayError::SavedFailure {
                reason: described("Stripe answers a failure it saved under this key"),
            })
        }
        // Stripe says a retry cannot help: an operator must look.
        500.. if answer.should_retry == Some(false) => {
            return Err(GatewayError::Misconfigured {
                reason: described("Stripe failed and says a retry cannot help"),
            })
        }
        // Stripe may or may not have acted; the same key finds out.
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
            payment_intent: error
                .payment_intent
                .as_ref()
                .and_then(|intent| intent.get("id")?.as_str().map(str::to_owned)),
        }),
        "idempotency_error" => Err(GatewayError::Misconfigured {
            reason: described("Stripe saw an idempotency key reused with other parameters"),
        }),
        _ if answer.should_retry == Some(true) => Err(GatewayError::OutcomeUnknown {
            reason: described("Stripe asked for a retry"),
        }),
        "invalid_request_error" => Err(GatewayError::Rejected {
            message: described("Stripe rejected the request"),
        }),
        _ => Err(GatewayError::Rejected {
            message: described("Stripe refused the request"),
        }),
    }
}

/// A 404 `resource_missing`: Stripe has no such object.
pub fn is_missing(answer: &Answer) -> bool {
    answer.status == 404
        && serde_json::from_slice::<ErrorBody>(answer.body)
            .is_ok_and(|body| body.error.code.as_deref() == Some("resource_missing"))
}

/// A 2xx body that cannot be read still means Stripe acted; a retry with
/// the same key replays it.
pub fn unreadable(what: &str, why: impl std::fmt::Display) -> GatewayError {
    GatewayError::OutcomeUnknown {
        reason: format!("unreadable {what} from Stripe: {why}"),
    }
}

/// A list's objects, each read by `read`, and whether more follow them.
pub fn read_list<O: DeserializeOwned, T>(
    body: &[u8],
    what: &str,
    read: impl FnMut(O) -> Result<T, GatewayError>,
) -> Result<(Vec<T>, bool), GatewayError> {
    let page: ListObject<O> = serde_json::from_slice(body).map_err(|err| unreadable(what, err))?;
    let objects = page.data.into_iter().map(read).collect::<Result<_, _>>()?;
    Ok((objects, page.has_more))
}

/// A call that got no HTTP answer. Only failures before the request left are
/// known not to have acted.
pub fn transport_failure(err: ureq::Error) -> GatewayError {
    use ureq::Timeout;
    let not_sent = |reason: String| GatewayError::Unavailable {
        reason,
        retry_after: None,
    };
    match err {
        // Resolving, connecting and the TLS handshake come before any byte
        // of the request; a TLS error later on (`Rustls`) may not.
        ureq::Error::Timeout(Timeout::Resolve | Timeout::Connect)
        | ureq::Error::HostNotFound
        | ureq::Error::ConnectionFailed
        | ureq::Error::Tls(_) => not_sent(format!("cannot reach Stripe: {err}")),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2xx body read as JSON: what the tests classify with.
    fn read(body: &[u8]) -> Result<serde_json::Value, GatewayError> {
        serde_json::from_slice(body).map_err(|err| unreadable("object", err))
    }

    fn classify_answer(status: u16, body: &str) -> Result<serde_json::Value, GatewayError> {
        classify(
            &Answer {
                status,
                retry_after: None,
                should_retry: None,
                replayed: false,
                request_id: None,
                body: body.as_bytes(),
            },
            read,
        )
    }

    fn error_body(kind: &str, code: &str) -> String {
        format!(r#"{{"error": {{"type": "{kind}", "code": "{code}", "message": "m"}}}}"#)
    }

    #[test]
    fn a_2xx_body_is_read_by_the_reader() {
        let body = r#"{"id": "pi_1", "object": "payment_intent"}"#;
        assert_eq!(classify_answer(200, body).unwrap()["id"], "pi_1");
    }

    #[test]
    fn a_card_error_is_a_decline_with_its_codes() {
        let body = r#"{"error": {"type": "card_error", "code": "card_declined",
                       "decline_code": "insufficient_funds", "message": "Your card has insufficient funds."}}"#;
        assert_eq!(
            classify_answer(402, body),
            Err(GatewayError::Declined {
                code: "card_declined".to_owned(),
                decline_code: Some("insufficient_funds".to_owned()),
                message: "Your card has insufficient funds.".to_owned(),
                payment_intent: None,
            })
        );
    }

    #[test]
    fn a_payment_method_stripe_does_not_have_is_told_from_other_rejections() {
        let unknown = r#"{"error": {"type": "invalid_request_error", "code": "resource_missing",
                          "param": "payment_method", "message": "No such PaymentMethod: 'pm_x'"}}"#;
        let other = r#"{"error": {"type": "invalid_request_error", "code": "resource_missing",
                        "param": "customer", "message": "No such customer: 'cus_x'"}}"#;
        let classified = |body| classify_answer(400, body).unwrap_err();
        assert!(classified(unknown).is_unknown_payment_method());
        assert!(!classified(other).is_unknown_payment_method());
    }

    #[test]
    fn a_reversal_the_balance_cannot_cover_is_told_from_other_rejections() {
        let short = r#"{"error": {"type": "invalid_request_error", "code": "balance_insufficient",
                        "message": "Insufficient funds in the destination account."}}"#;
        let classified = |body: &str| classify_answer(400, body).unwrap_err();
        assert!(classified(short).is_balance_insufficient());
        assert!(
            !classified(&error_body("invalid_request_error", "amount_too_large"))
                .is_balance_insufficient()
        );
    }

    #[test]
    fn each_error_kind_maps_to_what_ridepay_must_do() {
        let cases = [
            (
                400,
                error_body("invalid_request_error", "resource_missing"),
                "Rejected",
            ),
            (400, error_body("idempotency_error", ""), "Misconfigured"),
            (
                401,
                error_body("invalid_request_error", "api_key_invalid"),
                "Misconfigured",
            ),
            (
                403,
                error_body("invalid_request_error", ""),
                "Misconfigured",
            ),
            (404, "<html>not stripe</html>".to_owned(), "Misconfigured"),
            (
                409,
                error_body("idempotency_error", "idempotency_key_in_use"),
                "Unavailable",
            ),
            (
                429,
                error_body("invalid_request_error", "rate_limit"),
                "Unavailable",
            ),
            (500, error_body("api_error", ""), "OutcomeUnknown"),
            (503, "".to_owned(), "OutcomeUnknown"),
            (200, "{not json".to_owned(), "OutcomeUnknown"),
        ];
        for (status, body, expected) in cases {
            let got = classify_answer(status, &body).unwrap_err();
            assert!(
                format!("{got:?}").starts_with(expected),
                "{status} {body}: {got:?}"
            );
        }
    }

    #[test]
    fn retry_after_and_should_retry_are_honoured() {
        let limited = classify(
            &Answer {
                status: 429,
                retry_after: Some(Duration::from_secs(7)),
                should_retry: Some(true),
                replayed: false,
                request_id: None,
                body: error_body("invalid_request_error", "rate_limit").as_bytes(),
            },
            read,
        );
        assert!(matches!(
            limited,
            Err(GatewayError::Unavailable { retry_after: Some(after), .. }) if after == Duration::from_secs(7)
        ));
        let retry = classify(
            &Answer {
                status: 400,
                retry_after: None,
                should_retry: Some(true),
                replayed: false,
                request_id: None,
                body: error_body("invalid_request_error", "lock_timeout").as_bytes(),
            },
            read,
        );
        assert!(matches!(retry, Err(GatewayError::OutcomeUnknown { .. })));
    }

    fn failed(
        should_retry: Option<bool>,
        replayed: bool,
    ) -> Result<serde_json::Value, GatewayError> {
        classify(
            &Answer {
                status: 500,
                retry_after: None,
                should_retry,
                replayed,
                request_id: Some("req_7Ab".to_owned()),
                body: error_body("api_error", "internal").as_bytes(),
            },
            read,
        )
    }

    #[test]
    fn a_500_is_unknown_unless_stripe_saved_it_or_says_not_to_retry_and_names_its_request() {
        assert!(matches!(
            failed(Some(true), false),
            Err(GatewayError::OutcomeUnknown { reason }) if reason.contains("Stripe request req_7Ab")
        ));
        assert!(matches!(
            failed(Some(false), false),
            Err(GatewayError::Misconfigured { reason }) if reason.contains("req_7Ab")
        ));
        for should_retry in [Some(false), Some(true), None] {
            assert!(
                matches!(
                    failed(should_retry, true),
                    Err(GatewayError::SavedFailure { reason }) if reason.contains("req_7Ab")
                ),
                "{should_retry:?}"
            );
        }
    }
}
