//! A captured charge's balance transaction: what the charge moved into the
//! platform's balance, less the gateway's fee, as both doubles price it,
//! and in which currency the platform's balance took it.

use ridepay_gateway::{BalanceTransaction, IntentStatus, PaymentIntent};

/// Stripe's standard card price, which the doubles charge on every capture
/// in every currency: 2.9 % of the amount captured, rounded half up, plus
/// 30 minor units.
pub fn card_fee(captured_cents: i64) -> i64 {
    (captured_cents * 29 + 500) / 1000 + 30
}

/// The currency a payment settles in and the rate it is converted at, as
/// a fraction (`numerator / denominator`, so that amounts convert exactly):
/// its own at 1, but for the card that settles converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settlement {
    pub(crate) currency: &'static str,
    numerator: i64,
    denominator: i64,
}

impl Settlement {
    pub(crate) fn of(payment_method: &str, currency: &str) -> Option<Settlement> {
        let (into, numerator, denominator) = match (
            payment_method == "pm_card_ridepay_settlesConverted",
            currency,
        ) {
            (true, "usd") => ("eur", 9, 10),
            (true, "eur") => ("usd", 11, 10),
            (true, "gbp") => ("usd", 5, 4),
            _ => return None,
        };
        Some(Settlement {
            currency: into,
            numerator,
            denominator,
        })
    }

    /// `cents` of the payment's currency in the settlement's, rounded half
    /// up (half away from zero for a refund's negative amount).
    pub(crate) fn convert(&self, cents: i64) -> i64 {
        let scaled = cents * self.numerator;
        let half = self.denominator / 2;
        if scaled < 0 {
            -((-scaled + half) / self.denominator)
        } else {
            (scaled + half) / self.denominator
        }
    }

    /// Stripe's `exchange_rate`: the payment's amount times it is the
    /// settled amount.
    pub(crate) fn rate(&self) -> f64 {
        self.numerator as f64 / self.denominator as f64
    }
}

/// The id of a charge's balance transaction: the charge's, retagged
/// (`ch_` to `txn_`), so that every answer about the charge names the same
/// one. A refund's is `txn_` and the refund's id
/// ([`refund_transaction_id`]), so the two never meet.
pub fn charge_transaction_id(charge: &str) -> String {
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

/// A captured charge's balance transaction, paid with `payment_method`.
pub(crate) fn of_captured(
    charge: &str,
    captured_cents: i64,
    currency: &str,
    payment_method: &str,
) -> BalanceTransaction {
    let settlement = Settlement::of(payment_method, currency);
    let amount = settlement.map_or(captured_cents, |settled| settled.convert(captured_cents));
    let fee = card_fee(amount);
    BalanceTransaction {
        id: charge_transaction_id(charge),
        amount_cents: amount,
        fee_cents: fee,
        net_cents: amount - fee,
        currency: settlement
            .map_or(currency, |settled| settled.currency)
            .to_owned(),
        exchange_rate: settlement.map(|settled| settled.rate()),
    }
}

/// A refund's balance transaction: what it took out of the balance, with
/// no fee.
pub(crate) fn of_refund(
    refund: &str,
    refunded_cents: i64,
    currency: &str,
    payment_method: Option<&str>,
) -> BalanceTransaction {
    let settlement = payment_method.and_then(|method| Settlement::of(method, currency));
    let amount = -settlement.map_or(refunded_cents, |settled| settled.convert(refunded_cents));
    BalanceTransaction {
        id: refund_transaction_id(refund),
        amount_cents: amount,
        fee_cents: 0,
        net_cents: amount,
        currency: settlement
            .map_or(currency, |settled| settled.currency)
            .to_owned(),
        exchange_rate: settlement.map(|settled| settled.rate()),
    }
}

/// The intent as a call gets it that asked for its charge's balance
/// transaction (`asked`), or did not; a hold's charge has none yet.
pub(crate) fn with_balance_transaction(
    intent: PaymentIntent,
    payment_method: &str,
    asked: bool,
) -> PaymentIntent {
    let captured = intent.status == IntentStatus::Succeeded && intent.amount_received_cents > 0;
    let balance_transaction = intent
        .latest_charge
        .as_deref()
        .filter(|_| captured && asked)
        .map(|charge| {
            of_captured(
                charge,
                intent.amount_received_cents,
                &intent.currency,
                payment_method,
            )
        });
    PaymentIntent {
        balance_transaction,
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

    #[test]
    fn the_converting_card_settles_in_another_currency_rounded_half_up() {
        let card = "pm_card_ridepay_settlesConverted";
        assert_eq!(Settlement::of("pm_card_visa", "usd"), None);
        let usd = Settlement::of(card, "usd").unwrap();
        assert_eq!(
            (usd.currency, usd.convert(1005), usd.convert(-1005)),
            ("eur", 905, -905)
        );
        let gbp = Settlement::of(card, "gbp").unwrap();
        assert_eq!(
            (gbp.currency, gbp.convert(2002), gbp.rate()),
            ("usd", 2503, 1.25)
        );
        let charged = of_captured("ch_x", 2000, "eur", card);
        assert_eq!(
            (
                charged.currency.as_str(),
                charged.amount_cents,
                charged.fee_cents,
                charged.net_cents
            ),
            ("usd", 2200, card_fee(2200), 2200 - card_fee(2200))
        );
        assert_eq!(of_refund("re_x", 500, "eur", Some(card)).net_cents, -550);
    }
}
