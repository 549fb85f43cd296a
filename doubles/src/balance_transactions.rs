//! Balance transactions: what a captured charge moved into the platform's
//! balance at the gateway, and the gateway's fee on it, as both doubles
//! report them.

use ridepay_gateway::{BalanceTransaction, IntentStatus, PaymentIntent};

/// Stripe's standard card price, which the doubles charge on every capture
/// in every currency: 2.9 % of the amount captured, rounded half up, plus
/// 30 minor units.
pub fn card_fee(captured_cents: i64) -> i64 {
    (captured_cents * 29 + 500) / 1000 + 30
}

/// The balance transaction of the intent's charge, once captured (a hold's
/// charge has none yet). Its id is the charge's, retagged, so that every
/// answer about the charge names the same one.
pub fn of_charge(intent: &PaymentIntent) -> Option<BalanceTransaction> {
    let captured = intent.status == IntentStatus::Succeeded && intent.amount_received_cents > 0;
    let charge = intent.latest_charge.as_deref().filter(|_| captured)?;
    let fee = card_fee(intent.amount_received_cents);
    Some(BalanceTransaction {
        id: format!("txn_{}", charge.strip_prefix("ch_").unwrap_or(charge)),
        amount_cents: intent.amount_received_cents,
        fee_cents: fee,
        net_cents: intent.amount_received_cents - fee,
        currency: intent.currency.clone(),
        exchange_rate: None,
    })
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
}
