//! Balance transactions over Stripe's HTTP API: a captured charge's, which
//! comes expanded with the charge, and the balance's list.

use chrono::DateTime;
use serde::Deserialize;
use serde_json::Value;

use super::wire::{page_query, ListObject};
use ridepay_gateway::{
    BalanceTransaction, BalanceTransactionPage, GatewayError, ListBalanceTransactions,
    ListedBalanceTransaction,
};

/// A balance transaction, as far as ridepay reads it.
#[derive(Debug, Deserialize)]
struct BalanceTransactionObject {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    amount: i64,
    fee: i64,
    net: i64,
    currency: String,
    exchange_rate: Option<f64>,
    /// An id, or the object itself when expanded; null for some kinds.
    #[serde(default)]
    source: Option<Value>,
    created: i64,
}

impl BalanceTransactionObject {
    fn listed(self) -> Result<ListedBalanceTransaction, String> {
        let created = DateTime::from_timestamp(self.created, 0)
            .ok_or_else(|| format!("created {}", self.created))?;
        let source = match self.source {
            Some(Value::String(id)) => Some(id),
            Some(object) => object["id"].as_str().map(str::to_owned),
            None => None,
        };
        Ok(ListedBalanceTransaction {
            kind: self.kind,
            source,
            created,
            transaction: BalanceTransaction {
                id: self.id,
                amount_cents: self.amount,
                fee_cents: self.fee,
                net_cents: self.net,
                currency: self.currency,
                exchange_rate: self.exchange_rate,
            },
        })
    }
}

/// The balance transaction of an expanded charge: there when it was
/// expanded too (`expand[]=latest_charge.balance_transaction`) and the
/// charge is captured; its id alone, or null, is none.
pub(super) fn of_charge(charge: &Value) -> Result<Option<BalanceTransaction>, String> {
    match &charge["balance_transaction"] {
        object @ Value::Object(_) => BalanceTransactionObject::deserialize(object)
            .map_err(|err| err.to_string())?
            .listed()
            .map(|listed| Some(listed.transaction)),
        _ => Ok(None),
    }
}

/// The query of `GET /v1/balance_transactions`: `created[gte]` in whole
/// seconds (rounded down, so nothing made in the second is missed), and
/// `source`.
pub fn list_query(request: &ListBalanceTransactions) -> Vec<(&'static str, String)> {
    let optional = [
        (
            "created[gte]",
            request
                .created_gte
                .map(|since| since.timestamp().to_string()),
        ),
        ("source", request.source.clone()),
        ("starting_after", request.starting_after.clone()),
    ];
    page_query(request.limit, optional)
}

/// A page of balance transactions.
pub fn page(body: &[u8]) -> Result<BalanceTransactionPage, GatewayError> {
    let page: ListObject<BalanceTransactionObject> = serde_json::from_slice(body)
        .map_err(|err| super::outcome::unreadable("balance transaction list", err))?;
    let transactions = page
        .data
        .into_iter()
        .map(BalanceTransactionObject::listed)
        .collect::<Result<_, _>>()
        .map_err(|why| super::outcome::unreadable("balance transaction list", why))?;
    Ok(BalanceTransactionPage {
        transactions,
        has_more: page.has_more,
    })
}
