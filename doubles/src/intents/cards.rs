//! The test payment methods: Stripe's test cards, and ridepay's own for the
//! paths Stripe has no card for, with what each does.

/// The test payment methods and what each does.
pub const TEST_PAYMENT_METHODS: &[(&str, &str)] = &[
    (
        "pm_card_visa",
        "succeeds; a hold that asks allows 20 % overcapture (and every other pm_card_ \
         method Stripe names a card by, without overcapture)",
    ),
    (
        "pm_card_ridepay_noOvercapture",
        "ridepay's: holds, without overcapture (increments still offered)",
    ),
    (
        "pm_card_ridepay_extendedHold",
        "ridepay's: a hold that asks allows 20 % overcapture and lasts 30 days",
    ),
    (
        "pm_card_visa_chargeDeclined",
        "declined: card_declined, generic_decline",
    ),
    (
        "pm_card_chargeDeclinedInsufficientFunds",
        "declined: card_declined, insufficient_funds",
    ),
    (
        "pm_card_authenticationRequired",
        "needs the rider's authentication (requires_action); declined off session \
         (authentication_required)",
    ),
    (
        "pm_card_ridepay_processing",
        "ridepay's: settles later (processing)",
    ),
    (
        "pm_card_ridepay_incrementDeclined",
        "ridepay's: holds, but a raise of the hold is declined",
    ),
    (
        "pm_card_pendingRefund",
        "pays; a refund is pending, then succeeds",
    ),
    ("pm_card_refundFail", "pays; a refund succeeds, then fails"),
    (
        "pm_card_ridepay_pendingRefundFails",
        "ridepay's: pays; a refund is pending, then fails",
    ),
    (
        "pm_card_ridepay_settlesConverted",
        "ridepay's: pays; its charge and refunds settle in another currency \
         (usd in eur at 0.9, eur in usd at 1.1, gbp in usd at 1.25)",
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behaviour {
    Succeeds,
    Declines(&'static str),
    NeedsAuthentication,
    Processing,
    RefusesIncrements,
    Unknown,
}

pub(crate) fn behaviour(payment_method: &str) -> Behaviour {
    match payment_method {
        "pm_card_visa_chargeDeclined" => Behaviour::Declines("generic_decline"),
        "pm_card_chargeDeclinedInsufficientFunds" => Behaviour::Declines("insufficient_funds"),
        "pm_card_authenticationRequired" => Behaviour::NeedsAuthentication,
        "pm_card_ridepay_processing" => Behaviour::Processing,
        "pm_card_ridepay_incrementDeclined" => Behaviour::RefusesIncrements,
        pm if pm.starts_with("pm_card_") => Behaviour::Succeeds,
        _ => Behaviour::Unknown,
    }
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

pub const DECLINE_MESSAGE: &str = "Your card was declined.";

/// A decline, as the PaymentIntent's `last_payment_error` keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decline {
    pub(crate) code: &'static str,
    pub(crate) decline_code: &'static str,
    pub(crate) message: &'static str,
}

/// What a create with the payment method is declined for, if it is: a card
/// that needs the rider's authentication cannot have it off session.
pub(crate) fn decline_of(behaviour: Behaviour, off_session: bool) -> Option<Decline> {
    match behaviour {
        Behaviour::Declines(decline_code) => Some(Decline {
            code: "card_declined",
            decline_code,
            message: DECLINE_MESSAGE,
        }),
        Behaviour::NeedsAuthentication if off_session => Some(Decline {
            code: "authentication_required",
            decline_code: "authentication_required",
            message: "Your card was declined. This transaction requires authentication.",
        }),
        _ => None,
    }
}
