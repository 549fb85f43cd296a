//! The test payment methods: Stripe's test cards, and ridepay's own for the
//! paths Stripe has no card for, with what each does.

/// The test payment methods and what each does.
pub const TEST_PAYMENT_METHODS: &[(&str, &str)] = &[
    (
        "pm_card_visa",
        "succeeds (and every other pm_card_ method Stripe names a card by)",
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
        "needs the rider's authentication (requires_action)",
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

pub const DECLINE_MESSAGE: &str = "Your card was declined.";
