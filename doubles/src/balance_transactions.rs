//! A captured charge's balance transaction: what the charge moved into the
//! platform's balance, less the gateway's fee, as both doubles price it.

use ridepay_gateway::{BalanceTransaction, IntentStatus, PaymentIntent};

/// Stripe's standard card price, which the doubles charge on every capture
/// in every currency: 2.9 % of the amount captured, rounded half up, plus
/// 30 minor units.
pub fn card_fee(captured_cents: i64) -> i64 {
    (captured_cents * 29 + 500) / 1000 + 30
}

/// The id of a charge's balance transaction: the charge's, retagged
/// (`ch_` to `txn_`), so that every answer about the charge names the same
/// one. A refund's is `txn_` and the refund's id
/// ([`refund_transaction_id`]), so the two never meet.
fn charge_transaction_id(charge: &str) -> String {
    format!("txn_{}", charge.strip_prefix("ch_").unwrap_or(charge))
}

/// The id of a refund's balance transaction.
pub fn refund_transaction_id(refund: &str) -> String {
    format!("txn_{refund}")
}

/// What follows `txn_` in a balance transaction's id: a refund's id
/// (`re_...`), or a charge's without its `ch_`.
pub fn transaction_source(id: &str) -> Option<&str> {
    id.strip_prefix("txn_")
}

/// A captured charge's balance transaction.
pub(crate) fn of_captured(charge: &str, captured_cents: i64, currency: &str) -> BalanceTransaction {
    let fee = card_fee(captured_cents);
    BalanceTransaction {
        id: charge_transaction_id(charge),
        amount_cents: captured_cents,
        fee_cents: fee,
        net_cents: captured_cents - fee,
        currency: currency.to_owned(),
        exchange_rate: None,
    }
}

/// The balance transaction of the intent's charge, once captured (a hold's
/// charge has none yet).
pub fn of_charge(intent: &PaymentIntent) -> Option<BalanceTransaction> {
    let captured = intent.status == IntentStatus::Succeeded && intent.amount_received_cents > 0;
    let charge = intent.latest_charge.as_deref().filter(|_| captured)?;
    Some(of_captured(
        charge,
        intent.amount_received_cents,
        &intent.currency,
    ))
}

/// The intent as a call gets it that asked for its charge's balance
/// transaction (`asked`), or did not.
pub(crate) fn with_balance_transaction(intent: PaymentIntent, asked: bool) -> PaymentIntent {
    PaymentIntent {
        balance_transaction: of_charge(&intent).filter(|_| asked),
        ..intent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fee_is_2_9_percent_rounded_half_up_and_30() {
        assert_eq!(card_fee(2000), 88);
        assert_eq!(card_fee(1050), 60);
        assert_eq!(card_fee(1500), 74);
        assert_eq!(card_fee(1), 30);
    }

    #[test]
    fn a_charges_transaction_is_named_after_it() {
        assert_eq!(charge_transaction_id("ch_sim_ab12"), "txn_sim_ab12");
    }
}
