//! The events a destination may subscribe to. They are staged by the
//! database's triggers (`migrations/..._outbound_webhooks`), in the
//! transaction of the change each reports, wherever ridepay makes it.

/// Every event type, as the triggers name them.
pub const EVENT_TYPES: [&str; 11] = [
    "ride.authorized",
    "ride.requires_action",
    "ride.captured",
    "ride.canceled",
    "ride.expired",
    "ride.payment_declined",
    "ride.payment_failed",
    "ride.disputed",
    "ride.tipped",
    "refund.succeeded",
    "refund.failed",
];

/// What a subscription may name: an event type, a family (`ride.*`,
/// `refund.*`), or `*`.
pub fn is_pattern(pattern: &str) -> bool {
    match pattern.strip_suffix(".*") {
        _ if pattern == "*" => true,
        Some(family) => EVENT_TYPES
            .iter()
            .any(|event| event.split('.').next() == Some(family)),
        None => EVENT_TYPES.contains(&pattern),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_event_types_families_or_everything() {
        for good in ["*", "ride.*", "refund.*", "ride.captured", "refund.failed"] {
            assert!(is_pattern(good), "{good}");
        }
        for bad in [
            "",
            "ride",
            "ride.",
            "rides.*",
            "ride.created",
            "*.captured",
            "ride.**",
        ] {
            assert!(!is_pattern(bad), "{bad}");
        }
    }
}
