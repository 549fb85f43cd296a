//! What a call made, found in the gateway's lists when its answer was a
//! failure saved under its key: reconciliation's lookups. A list never
//! lags, so what it does not show was not made; search may find sooner,
//! but proves nothing absent. A lookup that fails proves nothing either.

use std::collections::BTreeMap;
use std::thread;

use chrono::{DateTime, Utc};

use super::calls::{Final, GENERATION};
use crate::idempotency::Found;
use crate::service_error::unavailable;
use crate::service_error::ServiceError;
use ridepay_gateway::{
    GatewayError, IntentStatus, ListIntents, Payment, PaymentError, PaymentGateway, PaymentIntent,
    Refund,
};

/// How long before its ride the gateway may have dated a PaymentIntent
/// (its clock against the database's).
const CLOCK_SKEW: chrono::Duration = chrono::Duration::minutes(5);

/// Whether `metadata` carries every pair of `call`'s metadata but its
/// generation: any generation of the call.
fn of_call(metadata: &BTreeMap<String, String>, call: &[(String, String)]) -> bool {
    call.iter()
        .filter(|(name, _)| name != GENERATION)
        .all(|(name, value)| metadata.get(name) == Some(value))
}

/// The PaymentIntents, of any generation, that a create whose metadata is
/// `call` made since `since` (for `customer`, when the call named one),
/// newest first: found by search first, else proven by listing every page.
pub fn intents_made(
    gateway: &dyn PaymentGateway,
    call: &[(String, String)],
    since: DateTime<Utc>,
    customer: Option<&str>,
) -> Result<Vec<PaymentIntent>, ServiceError> {
    let pairs: Vec<(&str, &str)> = call
        .iter()
        .filter(|(name, _)| name != GENERATION)
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let searched = patiently(|| gateway.search_intents(&pairs))?;
    let found: Vec<PaymentIntent> = searched
        .intents
        .into_iter()
        .filter(|intent| of_call(&intent.metadata, call))
        .collect();
    if !found.is_empty() {
        return Ok(found);
    }
    let mut made = Vec::new();
    let mut page_request = Some(ListIntents::since(
        since - CLOCK_SKEW,
        customer.map(str::to_owned),
    ));
    while let Some(request) = page_request {
        let page = patiently(|| gateway.list_intents(&request))?;
        page_request = request.after(&page);
        made.extend(
            page.intents
                .into_iter()
                .filter(|intent| of_call(&intent.metadata, call)),
        );
    }
    Ok(made)
}

/// The newest PaymentIntent, of any generation, that a create whose
/// metadata is `call` made, as its answer would have said it: a decline
/// (`requires_payment_method`) as a decline.
pub fn create_answer(
    gateway: &dyn PaymentGateway,
    call: &[(String, String)],
    since: DateTime<Utc>,
    customer: Option<&str>,
) -> Result<Option<Final<PaymentIntent>>, ServiceError> {
    Ok(intents_made(gateway, call, since, customer)?
        .into_iter()
        .next()
        .map(|intent| match intent.status {
            IntentStatus::RequiresPaymentMethod => Final::Refused(declined(intent)),
            _ => Final::Made(intent),
        }))
}

/// The decline a PaymentIntent left behind, as a create's answer says it.
pub fn declined(intent: PaymentIntent) -> GatewayError {
    let error = intent.last_payment_error.unwrap_or(PaymentError {
        code: None,
        decline_code: None,
        message: None,
    });
    GatewayError::Declined {
        code: error.code.unwrap_or_else(|| "card_declined".to_owned()),
        decline_code: error.decline_code,
        message: error
            .message
            .unwrap_or_else(|| "Your card was declined.".to_owned()),
        payment_intent: Some(intent.id),
    }
}

/// The refund, of any generation, that a refund call whose metadata is
/// `call` made of `payment`.
pub fn refund_made(
    gateway: &dyn PaymentGateway,
    payment: &Payment,
    call: &[(String, String)],
) -> Result<Option<Refund>, ServiceError> {
    Ok(patiently(|| gateway.refunds_of(payment))?
        .into_iter()
        .find(|refund| of_call(&refund.metadata, call)))
}

/// What a look-up found: the answer the call made, or, proven never made,
/// the refusal that ends the key.
pub fn found<K, T>(known: K, made: Option<Final<T>>) -> Found<K, Final<T>> {
    match made {
        Some(answer) => Found::Made(known, answer),
        None => Found::Absent {
            known,
            refused: Final::Refused(never_made()),
        },
    }
}

/// The refusal that ends a key whose call the gateway lost its answer to,
/// proven never made, once it may no longer be sent again (a stored 502).
pub fn never_made() -> GatewayError {
    GatewayError::Rejected {
        message: "the payment gateway failed this call and made nothing; it is past the \
                  deadline for sending it again"
            .to_owned(),
    }
}

/// How many times a read the gateway rate-limited is tried again.
const RATE_LIMITED_TRIES: u32 = 5;

/// A gateway read, tried again after the wait the gateway asked for when it
/// rate-limited it (Stripe allows 100 reads a second live, 25 in test
/// mode); any other failure proves nothing and is returned.
pub fn patiently<T>(mut read: impl FnMut() -> Result<T, GatewayError>) -> Result<T, ServiceError> {
    let mut tries = 1;
    loop {
        match read() {
            Err(GatewayError::Unavailable {
                retry_after: Some(wait),
                ..
            }) if tries < RATE_LIMITED_TRIES => {
                thread::sleep(wait);
                tries += 1;
            }
            other => return other.map_err(unavailable),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::time::Duration;

    #[test]
    fn a_rate_limited_read_is_tried_again_after_the_wait_asked_and_any_other_failure_is_not() {
        let calls = Cell::new(0);
        let limited_twice = patiently(|| {
            calls.set(calls.get() + 1);
            match calls.get() {
                1 | 2 => Err(GatewayError::Unavailable {
                    reason: "429".to_owned(),
                    retry_after: Some(Duration::from_millis(1)),
                }),
                n => Ok(n),
            }
        });
        assert_eq!(limited_twice.unwrap(), 3);

        let failing = Cell::new(0);
        let failed = patiently(|| -> Result<(), _> {
            failing.set(failing.get() + 1);
            Err(GatewayError::OutcomeUnknown {
                reason: "reset".to_owned(),
            })
        });
        assert!(failed.is_err());
        assert_eq!(failing.get(), 1);

        let forever = Cell::new(0);
        let gave_up = patiently(|| -> Result<(), _> {
            forever.set(forever.get() + 1);
            Err(GatewayError::Unavailable {
                reason: "429".to_owned(),
                retry_after: Some(Duration::from_millis(1)),
            })
        });
        assert!(gave_up.is_err());
        assert_eq!(forever.get(), RATE_LIMITED_TRIES);
    }
}
