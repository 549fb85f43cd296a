//! The charges that captured a ride's money, each recorded by the statement
//! that records its capture. The database posts a charge to the ledger as
//! it is recorded: its capture, and the gateway's fee once a balance
//! transaction says it (with the answer, or from reconciliation).

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, QueryFragment};
use diesel::sql_types::{BigInt, Nullable, Text};
use diesel::QueryResult;

use crate::payments::PaymentIntent;

/// A charge the gateway captured, as a PaymentIntent's answer shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CapturedCharge {
    id: String,
    payment_intent_id: String,
    amount_cents: i64,
    /// The balance transaction's id and fee, when the answer carried it in
    /// the ride's currency; a charge settled in another currency waits for
    /// an operator (`ridepay ledger check` lists it).
    fee: Option<(String, i64)>,
}

impl CapturedCharge {
    /// The charge `intent` captured, if it captured one.
    pub fn of(intent: &PaymentIntent) -> Option<CapturedCharge> {
        let id = intent.latest_charge.clone()?;
        let fee = intent
            .balance_transaction
            .as_ref()
            .filter(|txn| txn.currency == intent.currency && txn.exchange_rate.is_none())
            .map(|txn| (txn.id.clone(), txn.fee_cents));
        (intent.amount_received_cents > 0).then(|| CapturedCharge {
            id,
            payment_intent_id: intent.id.clone(),
            amount_cents: intent.amount_received_cents,
            fee,
        })
    }
}

/// The record of the changed ride's charge (`db::recorded`), if it has one:
/// an INSERT either way, writing no row without a charge, so that the
/// statement's text does not depend on it.
pub struct ChargeRecord {
    id: Option<String>,
    payment_intent_id: Option<String>,
    amount_cents: Option<i64>,
    balance_transaction_id: Option<String>,
    fee_cents: Option<i64>,
}

impl ChargeRecord {
    pub fn of(charge: Option<&CapturedCharge>) -> ChargeRecord {
        let fee = charge.and_then(|charge| charge.fee.clone());
        ChargeRecord {
            id: charge.map(|charge| charge.id.clone()),
            payment_intent_id: charge.map(|charge| charge.payment_intent_id.clone()),
            amount_cents: charge.map(|charge| charge.amount_cents),
            fee_cents: fee.as_ref().map(|(_, fee)| *fee),
            balance_transaction_id: fee.map(|(txn, _)| txn),
        }
    }
}

impl QueryFragment<Pg> for ChargeRecord {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(
            "INSERT INTO charges (id, ride_id, payment_intent_id, amount_cents, currency, \
             balance_transaction_id, fee_cents) SELECT charge.id, changed.id, ",
        );
        out.push_bind_param::<Nullable<Text>, _>(&self.payment_intent_id)?;
        out.push_sql(", ");
        out.push_bind_param::<Nullable<BigInt>, _>(&self.amount_cents)?;
        out.push_sql(", changed.currency, ");
        out.push_bind_param::<Nullable<Text>, _>(&self.balance_transaction_id)?;
        out.push_sql(", ");
        out.push_bind_param::<Nullable<BigInt>, _>(&self.fee_cents)?;
        out.push_sql(" FROM changed, (SELECT ");
        out.push_bind_param::<Nullable<Text>, _>(&self.id)?;
        out.push_sql(
            "::text AS id) AS charge WHERE charge.id IS NOT NULL ON CONFLICT (id) DO NOTHING",
        );
        Ok(())
    }
}
