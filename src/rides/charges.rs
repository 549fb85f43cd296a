//! The charge that captured a ride's money, recorded by the statement that
//! records the capture; the database posts it, and its fee, to the ledger.

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, QueryFragment};
use diesel::sql_types::{BigInt, Nullable, Text};
use diesel::QueryResult;

use crate::payments::PaymentIntent;

/// The charge an answer shows captured (by the fare's PaymentIntent or a
/// tip's own), as a record of the changed ride (`db::recorded`); with none,
/// it inserts nothing, in the same SQL text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChargeRecord {
    id: Option<String>,
    payment_intent_id: String,
    amount_cents: i64,
    /// The balance transaction, if the answer carried one in the ride's currency.
    balance_transaction_id: Option<String>,
    fee_cents: Option<i64>,
}

impl ChargeRecord {
    pub fn of(intent: &PaymentIntent) -> ChargeRecord {
        let txn = intent.settled_in_own_currency();
        ChargeRecord {
            id: intent.captured_charge().map(str::to_owned),
            payment_intent_id: intent.id.clone(),
            amount_cents: intent.amount_received_cents,
            balance_transaction_id: txn.map(|txn| txn.id.clone()),
            fee_cents: txn.map(|txn| txn.fee_cents),
        }
    }
}

impl QueryFragment<Pg> for ChargeRecord {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("INSERT INTO charges (id, payment_intent_id, ride_id, amount_cents, ");
        out.push_sql("currency, balance_transaction_id, fee_cents) SELECT * FROM (SELECT ");
        out.push_bind_param::<Nullable<Text>, _>(&self.id)?;
        out.push_sql(" AS charge, ");
        out.push_bind_param::<Text, _>(&self.payment_intent_id)?;
        out.push_sql(", id, ");
        out.push_bind_param::<BigInt, _>(&self.amount_cents)?;
        out.push_sql(", currency, ");
        out.push_bind_param::<Nullable<Text>, _>(&self.balance_transaction_id)?;
        out.push_sql(", ");
        out.push_bind_param::<Nullable<BigInt>, _>(&self.fee_cents)?;
        out.push_sql(" FROM changed) AS captured WHERE charge IS NOT NULL ON CONFLICT DO NOTHING");
        Ok(())
    }
}
