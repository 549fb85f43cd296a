//! What a PaymentIntent, as the gateway holds it, makes of a ride: the one
//! transition the ride's own steps, its events and (later) the return page
//! all apply, each only forward and only once.

use serde_json::{json, Value};

use super::charges::ChargeRecord;
use super::model::{RideStatus, Settlement};
use crate::payments::{IntentStatus, NextAction, PaymentIntent};

use RideStatus::*;

/// The statuses a ride may be in for `to` to follow (the diagram of
/// `docs/API.md`, "The ride's life").
pub fn may_follow(to: RideStatus) -> &'static [RideStatus] {
    match to {
        RequiresAction => &[Pending],
        Processing => &[Pending, RequiresAction],
        Authorized | PaymentDeclined => &[Pending, RequiresAction, Processing],
        Captured => &[Pending, RequiresAction, Processing, Authorized],
        Expired => &[Authorized],
        Canceled => &[Pending, RequiresAction, Processing, Authorized],
        Refunded => &[Captured],
        Disputed => &[Captured, Refunded, Canceled],
        Pending | PaymentFailed => &[Pending],
    }
}

/// The settlement the intent means for a ride now in `current`; `None` when
/// it means no change of status (a ride already past it, or an intent in a
/// state ridepay does not act on).
pub fn settlement(current: RideStatus, intent: &PaymentIntent) -> Option<Settlement> {
    let status = match intent.status {
        IntentStatus::RequiresCapture => Authorized,
        IntentStatus::Succeeded => Captured,
        IntentStatus::RequiresAction => RequiresAction,
        IntentStatus::Processing => Processing,
        IntentStatus::RequiresPaymentMethod => PaymentDeclined,
        // A hold Stripe released on its own lapsed; any other cancel of an
        // intent ridepay did not cancel itself cancels the ride.
        IntentStatus::Canceled
            if current == Authorized
                && intent.cancellation_reason.as_deref() == Some("automatic") =>
        {
            Expired
        }
        IntentStatus::Canceled => Canceled,
        IntentStatus::RequiresConfirmation => return None,
    };
    if status == current || !may_follow(status).contains(&current) {
        return None;
    }
    Some(Settlement {
        status,
        payment_intent_id: Some(intent.id.clone()),
        client_secret: intent.client_secret.clone(),
        next_action: (status == RequiresAction)
            .then(|| intent.next_action.as_ref().map(stripe_shape))
            .flatten(),
        // What the hold covers stays known after it is captured or released.
        amount_authorized_cents: match intent.status {
            IntentStatus::RequiresCapture => intent.amount_capturable_cents,
            IntentStatus::Succeeded => intent.amount_cents,
            _ => 0,
        },
        amount_captured_cents: intent.amount_received_cents,
        settling_key_id: None,
        amount_capturable_max_cents: (status == Authorized).then(|| {
            intent
                .amount_capturable_max_cents
                .unwrap_or(intent.amount_capturable_cents)
        }),
        hold_expires_at: intent.capture_before.filter(|_| status == Authorized),
        // Only a ride captured by its own completion keeps a tip that waited
        // for it; this never applies to a ride already captured.
        tip_cents: 0,
        charge: ChargeRecord::of(intent),
    })
}

/// A next action as Stripe shows it in a PaymentIntent.
fn stripe_shape(action: &NextAction) -> Value {
    match (&action.kind[..], &action.url) {
        ("redirect_to_url", Some(url)) => json!({
            "type": "redirect_to_url",
            "redirect_to_url": { "url": url, "return_url": action.return_url },
        }),
        (kind, _) => json!({ "type": kind }),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::payments::CaptureMethod;

    fn intent(status: IntentStatus) -> PaymentIntent {
        PaymentIntent {
            id: "pi_1".to_owned(),
            created: chrono::DateTime::UNIX_EPOCH,
            status,
            amount_cents: 2000,
            amount_capturable_cents: if status == IntentStatus::RequiresCapture {
                2000
            } else {
                0
            },
            amount_received_cents: if status == IntentStatus::Succeeded {
                2000
            } else {
                0
            },
            currency: "eur".to_owned(),
            capture_method: CaptureMethod::Manual,
            client_secret: Some("pi_1_secret_x".to_owned()),
            next_action: Some(NextAction {
                kind: "redirect_to_url".to_owned(),
                url: Some("https://pay.example/3ds".to_owned()),
                return_url: Some("https://ridepay.example/payments/return".to_owned()),
            }),
            latest_charge: None,
            last_payment_error: None,
            cancellation_reason: None,
            disputed: false,
            amount_capturable_max_cents: None,
            capture_before: None,
            balance_transaction: None,
            replayed: false,
            metadata: BTreeMap::new(),
        }
    }

    #[test]
    fn each_intent_status_moves_a_pending_ride_to_its_own() {
        let cases = [
            (IntentStatus::RequiresCapture, Some(Authorized)),
            (IntentStatus::Succeeded, Some(Captured)),
            (IntentStatus::RequiresAction, Some(RequiresAction)),
            (IntentStatus::Processing, Some(Processing)),
            (IntentStatus::RequiresPaymentMethod, Some(PaymentDeclined)),
            (IntentStatus::Canceled, Some(Canceled)),
            (IntentStatus::RequiresConfirmation, None),
        ];
        for (status, expected) in cases {
            assert_eq!(
                settlement(Pending, &intent(status)).map(|s| s.status),
                expected,
                "{status}"
            );
        }
    }

    #[test]
    fn nothing_goes_back_and_a_lapsed_hold_expires() {
        assert_eq!(
            settlement(Authorized, &intent(IntentStatus::RequiresAction)),
            None
        );
        assert_eq!(
            settlement(Captured, &intent(IntentStatus::RequiresCapture)),
            None
        );
        assert_eq!(
            settlement(Authorized, &intent(IntentStatus::RequiresCapture)),
            None
        );
        let mut lapsed = intent(IntentStatus::Canceled);
        lapsed.cancellation_reason = Some("automatic".to_owned());
        assert_eq!(
            settlement(Authorized, &lapsed).map(|s| s.status),
            Some(Expired)
        );
        assert_eq!(settlement(Expired, &lapsed), None);
    }

    #[test]
    fn only_a_ride_waiting_for_the_rider_keeps_the_next_action() {
        let waiting = settlement(Pending, &intent(IntentStatus::RequiresAction)).unwrap();
        assert_eq!(
            waiting.next_action,
            Some(json!({"type": "redirect_to_url", "redirect_to_url": {
                "url": "https://pay.example/3ds",
                "return_url": "https://ridepay.example/payments/return"}}))
        );
        let held = settlement(RequiresAction, &intent(IntentStatus::RequiresCapture)).unwrap();
        assert_eq!(
            (held.next_action, held.amount_authorized_cents),
            (None, 2000)
        );
    }
}
