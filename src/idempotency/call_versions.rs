//! What a key's calls send, as its call version fixes it: every release
//! that knows the version resends a call with the very parameters it was
//! first made with. Version 2's holds ask for increments only; version 3's
//! for overcapture and an extended authorization too; version 4's
//! PaymentIntents name a transfer group, and each of its calls that can
//! capture asks for the charge's balance transaction.

use ridepay_gateway::HoldRequest;

use super::request::GatewayCalls;

impl GatewayCalls {
    /// What the key's holds ask of the card.
    pub fn hold_request(self) -> HoldRequest {
        if self.version >= 3 {
            HoldRequest::RIDE_HAILING
        } else {
            HoldRequest::INCREMENTS_ONLY
        }
    }

    /// Whether the key's calls that can capture (a create, a capture) ask
    /// for the charge's balance transaction, so that the gateway's fee
    /// comes with the answer that records the capture.
    pub fn asks_for_balance_transaction(self) -> bool {
        self.version >= 4
    }

    /// The `transfer_group` of the PaymentIntents the key creates, which
    /// the transfers paid from them name; derived from the request, like
    /// the rest of the call.
    pub fn transfer_group(self) -> Option<String> {
        (self.version >= 4).then(|| format!("ridepay-{}", self.from.to_hex()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idempotency::RidepayKey;

    #[test]
    fn version_4_asks_for_the_balance_transaction_and_names_a_transfer_group_and_3_neither() {
        let from = RidepayKey::parse(&"ef".repeat(32)).unwrap();
        let current = GatewayCalls::first(from);
        let version_3 = GatewayCalls {
            version: 3,
            ..current
        };
        assert_eq!(current.version, 4);
        assert!(current.asks_for_balance_transaction());
        assert_eq!(
            current.transfer_group(),
            Some(format!("ridepay-{}", "ef".repeat(32)))
        );
        assert!(!version_3.asks_for_balance_transaction());
        assert_eq!(version_3.transfer_group(), None);
        assert_eq!(version_3.hold_request(), current.hold_request());
    }
}
