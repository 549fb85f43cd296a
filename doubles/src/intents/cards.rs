//! The test payment methods: Stripe's documented test PaymentMethods, and
//! ridepay's own (`pm_card_ridepay_`) for the paths Stripe has no card for,
//! with what each does. Any other id is no such PaymentMethod, as Stripe
//! refuses an id it never made.

/// What a test payment method does when a PaymentIntent is confirmed with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behaviour {
    Succeeds,
    Declines(Decline),
    NeedsAuthentication,
    Processing,
    RefusesIncrements,
    Unknown,
}

pub const DECLINE_MESSAGE: &str = "Your card was declined.";

/// A decline, as the PaymentIntent's `last_payment_error` keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decline {
    pub(crate) code: &'static str,
    pub(crate) decline_code: &'static str,
    pub(crate) message: &'static str,
}

/// Declined as `card_declined`, for `decline_code`.
const fn card_declined(decline_code: &'static str) -> Behaviour {
    Behaviour::Declines(Decline {
        code: "card_declined",
        decline_code,
        message: DECLINE_MESSAGE,
    })
}

/// Declined with an error code of its own, which Stripe gives as the
/// decline code too.
const fn declined_as(code: &'static str, message: &'static str) -> Behaviour {
    Behaviour::Declines(Decline {
        code,
        decline_code: code,
        message,
    })
}

/// Every test payment method the doubles know, with what it does. Refunds
/// and settlement read the payment method too (`refunds.rs`,
/// `balance_transactions.rs`); holds, `hold_features`.
const TEST_PAYMENT_METHODS: &[(&str, Behaviour)] = &[
    // Stripe's cards that pay, by brand and by country: a hold of
    // `pm_card_visa` that asks allows 20 % overcapture.
    ("pm_card_visa", Behaviour::Succeeds),
    ("pm_card_visa_debit", Behaviour::Succeeds),
    ("pm_card_mastercard", Behaviour::Succeeds),
    ("pm_card_mastercard_debit", Behaviour::Succeeds),
    ("pm_card_mastercard_prepaid", Behaviour::Succeeds),
    ("pm_card_amex", Behaviour::Succeeds),
    ("pm_card_discover", Behaviour::Succeeds),
    ("pm_card_diners", Behaviour::Succeeds),
    ("pm_card_jcb", Behaviour::Succeeds),
    ("pm_card_unionpay", Behaviour::Succeeds),
    ("pm_card_us", Behaviour::Succeeds),
    ("pm_card_gb", Behaviour::Succeeds),
    ("pm_card_ie", Behaviour::Succeeds),
    ("pm_card_fr", Behaviour::Succeeds),
    // Stripe's declines.
    ("pm_card_chargeDeclined", card_declined("generic_decline")),
    (
        "pm_card_visa_chargeDeclined",
        card_declined("generic_decline"),
    ),
    (
        "pm_card_chargeDeclinedInsufficientFunds",
        card_declined("insufficient_funds"),
    ),
    (
        "pm_card_visa_chargeDeclinedInsufficientFunds",
        card_declined("insufficient_funds"),
    ),
    ("pm_card_chargeDeclinedLostCard", card_declined("lost_card")),
    (
        "pm_card_visa_chargeDeclinedLostCard",
        card_declined("lost_card"),
    ),
    (
        "pm_card_chargeDeclinedStolenCard",
        card_declined("stolen_card"),
    ),
    (
        "pm_card_visa_chargeDeclinedStolenCard",
        card_declined("stolen_card"),
    ),
    (
        "pm_card_chargeDeclinedFraudulent",
        card_declined("fraudulent"),
    ),
    (
        "pm_card_visa_chargeDeclinedVelocityLimitExceeded",
        card_declined("card_velocity_exceeded"),
    ),
    (
        "pm_card_chargeDeclinedExpiredCard",
        declined_as("expired_card", "Your card has expired."),
    ),
    (
        "pm_card_chargeDeclinedIncorrectCvc",
        declined_as("incorrect_cvc", "Your card's security code is incorrect."),
    ),
    (
        "pm_card_chargeDeclinedProcessingError",
        declined_as(
            "processing_error",
            "An error occurred while processing your card. Try again in a little bit.",
        ),
    ),
    // Stripe's cards that need the rider's authentication (3-D Secure):
    // declined off session (`authentication_required`).
    (
        "pm_card_authenticationRequired",
        Behaviour::NeedsAuthentication,
    ),
    (
        "pm_card_threeDSecure2Required",
        Behaviour::NeedsAuthentication,
    ),
    // Stripe's refund cards: a refund pending, then succeeded; succeeded,
    // then failed.
    ("pm_card_pendingRefund", Behaviour::Succeeds),
    ("pm_card_refundFail", Behaviour::Succeeds),
    // ridepay's own.
    ("pm_card_ridepay_processing", Behaviour::Processing),
    (
        "pm_card_ridepay_incrementDeclined",
        Behaviour::RefusesIncrements,
    ),
    // Holds without overcapture, however asked.
    ("pm_card_ridepay_noOvercapture", Behaviour::Succeeds),
    // A hold that asks allows 20 % overcapture and lasts 30 days.
    ("pm_card_ridepay_extendedHold", Behaviour::Succeeds),
    // A refund pending, then failed.
    ("pm_card_ridepay_pendingRefundFails", Behaviour::Succeeds),
    // Its charge and refunds settle in another currency.
    ("pm_card_ridepay_settlesConverted", Behaviour::Succeeds),
];

pub(crate) fn behaviour(payment_method: &str) -> Behaviour {
    TEST_PAYMENT_METHODS
        .iter()
        .find(|(id, _)| *id == payment_method)
        .map_or(Behaviour::Unknown, |(_, behaviour)| *behaviour)
}

/// What a card allows a hold beyond the fare, when the hold asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HoldFeatures {
    /// Capture up to this share over the hold (Visa's taxis and limousines:
    /// 20 %), in percent.
    pub(crate) overcapture_percent: Option<i64>,
    /// Last 30 days, not 7.
    pub(crate) extended: bool,
}

pub(crate) fn hold_features(payment_method: &str) -> HoldFeatures {
    let (overcapture_percent, extended) = match payment_method {
        "pm_card_visa" => (Some(20), false),
        "pm_card_ridepay_extendedHold" => (Some(20), true),
        _ => (None, false),
    };
    HoldFeatures {
        overcapture_percent,
        extended,
    }
}

impl HoldFeatures {
    /// What a hold of `amount_cents` lets be captured, when overcapture is
    /// both allowed and asked for.
    pub(crate) fn overcapture_max(&self, asked: bool, amount_cents: i64) -> Option<i64> {
        self.overcapture_percent
            .filter(|_| asked)
            .map(|percent| amount_cents + amount_cents * percent / 100)
    }
}

/// What a create with the payment method is declined for, if it is: a card
/// that needs the rider's authentication cannot have it off session.
pub(crate) fn decline_of(behaviour: Behaviour, off_session: bool) -> Option<Decline> {
    match behaviour {
        Behaviour::Declines(decline) => Some(decline),
        Behaviour::NeedsAuthentication if off_session => Some(Decline {
            code: "authentication_required",
            decline_code: "authentication_required",
            message: "Your card was declined. This transaction requires authentication.",
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_documented_test_payment_methods_are_known() {
        for known in [
            "pm_card_visa",
            "pm_card_mastercard",
            "pm_card_amex",
            "pm_card_fr",
        ] {
            assert_eq!(behaviour(known), Behaviour::Succeeds, "{known}");
        }
        for unknown in [
            "pm_card_nope",
            "pm_card_",
            "pm_card_visa ",
            "pm_no_such_method",
            "",
        ] {
            assert_eq!(behaviour(unknown), Behaviour::Unknown, "{unknown:?}");
        }
    }

    #[test]
    fn each_decline_card_declines_as_stripes_does() {
        let declined = |id: &str| match behaviour(id) {
            Behaviour::Declines(decline) => (decline.code, decline.decline_code),
            other => panic!("{id}: {other:?}"),
        };
        assert_eq!(
            declined("pm_card_chargeDeclined"),
            declined("pm_card_visa_chargeDeclined")
        );
        assert_eq!(
            declined("pm_card_chargeDeclined"),
            ("card_declined", "generic_decline")
        );
        assert_eq!(
            declined("pm_card_chargeDeclinedInsufficientFunds"),
            ("card_declined", "insufficient_funds")
        );
        assert_eq!(
            declined("pm_card_chargeDeclinedExpiredCard"),
            ("expired_card", "expired_card")
        );
        assert_eq!(
            declined("pm_card_chargeDeclinedIncorrectCvc"),
            ("incorrect_cvc", "incorrect_cvc")
        );
    }

    #[test]
    fn a_card_that_needs_authentication_is_declined_only_off_session() {
        let card = behaviour("pm_card_authenticationRequired");
        assert_eq!(decline_of(card, false), None);
        assert_eq!(
            decline_of(card, true).map(|decline| decline.code),
            Some("authentication_required")
        );
    }
}
