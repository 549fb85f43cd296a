//! Transfers over Stripe's HTTP API: a driver's share sent from its source
//! charge (`POST /v1/transfers`), the list that proves whether one was made
//! (`GET /v1/transfers`), its reversals (`POST
//! /v1/transfers/{id}/reversals`) and the list that proves whether one was
//! made (`GET /v1/transfers/{id}/reversals`), and a connected account's
//! balance (`GET /v1/balance` as the account).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use super::intents::{metadata_fields, pair, Form};
use super::outcome::{read_list, unreadable};
use super::wire::{null_as_empty, page_query, ListObject};
use ridepay_gateway::{
    Balance, BalanceAmount, CreateTransfer, CreateTransferReversal, GatewayError,
    ListTransferReversals, ListTransfers, Transfer, TransferPage, TransferReversal,
    TransferReversalPage,
};

/// `POST /v1/transfers`: no `transfer_group`, which Stripe takes from the
/// source charge.
pub fn transfer_form(request: &CreateTransfer) -> Form {
    let mut form = vec![
        pair("amount", request.amount_cents),
        pair("currency", &request.currency),
        pair("destination", &request.destination),
        pair("source_transaction", &request.source_transaction),
    ];
    form.extend(metadata_fields(&request.metadata));
    form
}

/// `POST /v1/transfers/{id}/reversals`.
pub fn reversal_form(request: &CreateTransferReversal) -> Form {
    let mut form = vec![pair("amount", request.amount_cents)];
    form.extend(metadata_fields(&request.metadata));
    form
}

/// The query of `GET /v1/transfers`: `created[gte]` in whole seconds.
pub fn list_query(request: &ListTransfers) -> Vec<(&'static str, String)> {
    let optional = [
        ("destination", request.destination.clone()),
        (
            "created[gte]",
            request
                .created_gte
                .map(|since| since.timestamp().to_string()),
        ),
        ("transfer_group", request.transfer_group.clone()),
        ("starting_after", request.starting_after.clone()),
    ];
    page_query(request.limit, optional)
}

/// The query of `GET /v1/transfers/{id}/reversals`; the transfer is in
/// the path.
pub fn reversal_list_query(request: &ListTransferReversals) -> Vec<(&'static str, String)> {
    page_query(
        request.limit,
        [("starting_after", request.starting_after.clone())],
    )
}

/// An id, or the object it names when expanded.
fn id_of(value: Option<Value>) -> Option<String> {
    match value? {
        Value::String(id) => Some(id),
        object => object["id"].as_str().map(str::to_owned),
    }
}

fn time(what: &str, seconds: i64) -> Result<DateTime<Utc>, GatewayError> {
    DateTime::from_timestamp(seconds, 0)
        .ok_or_else(|| unreadable(what, format!("created {seconds}")))
}

/// A transfer, as far as ridepay reads it.
#[derive(Debug, Deserialize)]
struct TransferObject {
    id: String,
    amount: i64,
    amount_reversed: i64,
    created: i64,
    currency: String,
    #[serde(default)]
    destination: Option<Value>,
    #[serde(default)]
    source_transaction: Option<Value>,
    #[serde(default)]
    transfer_group: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    metadata: BTreeMap<String, String>,
    reversed: bool,
    reversals: ListObject<ReversalObject>,
}

impl TransferObject {
    fn transfer(self) -> Result<Transfer, GatewayError> {
        Ok(Transfer {
            created: time("transfer", self.created)?,
            reversals: self
                .reversals
                .data
                .into_iter()
                .map(ReversalObject::reversal)
                .collect::<Result<_, _>>()?,
            id: self.id,
            amount_cents: self.amount,
            amount_reversed_cents: self.amount_reversed,
            currency: self.currency,
            destination: id_of(self.destination).unwrap_or_default(),
            source_transaction: id_of(self.source_transaction),
            transfer_group: self.transfer_group,
            metadata: self.metadata,
            reversed: self.reversed,
        })
    }
}

/// A transfer Stripe made or holds.
pub fn transfer(body: &[u8]) -> Result<Transfer, GatewayError> {
    serde_json::from_slice::<TransferObject>(body)
        .map_err(|err| unreadable("transfer", err))?
        .transfer()
}

/// A page of transfers.
pub fn page(body: &[u8]) -> Result<TransferPage, GatewayError> {
    let (transfers, has_more) = read_list(body, "transfer list", TransferObject::transfer)?;
    Ok(TransferPage {
        transfers,
        has_more,
    })
}

#[derive(Debug, Deserialize)]
struct ReversalObject {
    id: String,
    amount: i64,
    created: i64,
    currency: String,
    transfer: Value,
    #[serde(default, deserialize_with = "null_as_empty")]
    metadata: BTreeMap<String, String>,
}

impl ReversalObject {
    fn reversal(self) -> Result<TransferReversal, GatewayError> {
        Ok(TransferReversal {
            created: time("transfer reversal", self.created)?,
            transfer: id_of(Some(self.transfer)).unwrap_or_default(),
            id: self.id,
            amount_cents: self.amount,
            currency: self.currency,
            metadata: self.metadata,
        })
    }
}

/// A reversal Stripe made.
pub fn reversal(body: &[u8]) -> Result<TransferReversal, GatewayError> {
    serde_json::from_slice::<ReversalObject>(body)
        .map_err(|err| unreadable("transfer reversal", err))?
        .reversal()
}

/// A page of a transfer's reversals.
pub fn reversal_page(body: &[u8]) -> Result<TransferReversalPage, GatewayError> {
    let (reversals, has_more) =
        read_list(body, "transfer reversal list", ReversalObject::reversal)?;
    Ok(TransferReversalPage {
        reversals,
        has_more,
    })
}

#[derive(Debug, Deserialize)]
struct AmountObject {
    amount: i64,
    currency: String,
}

#[derive(Debug, Deserialize)]
struct BalanceObject {
    available: Vec<AmountObject>,
    pending: Vec<AmountObject>,
}

/// A balance Stripe holds, per currency.
pub fn balance(body: &[u8]) -> Result<Balance, GatewayError> {
    let object: BalanceObject =
        serde_json::from_slice(body).map_err(|err| unreadable("balance", err))?;
    let amounts = |amounts: Vec<AmountObject>| {
        amounts
            .into_iter()
            .map(|amount| BalanceAmount {
                currency: amount.currency,
                amount_cents: amount.amount,
            })
            .collect()
    };
    Ok(Balance {
        available: amounts(object.available),
        pending: amounts(object.pending),
    })
}
