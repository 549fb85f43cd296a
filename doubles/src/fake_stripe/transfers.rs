//! Transfers to connected accounts: `POST /v1/transfers` (from a
//! `source_transaction`), `GET /v1/transfers`, `POST` and `GET
//! /v1/transfers/{id}/reversals`, with Stripe's idempotency and the fault
//! knobs; and a connected account's balance, `GET /v1/balance` with its
//! `Stripe-Account` header.

use super::calls::{connection, with_faults, Form};
use super::http::{Request, Response};
use super::state::{Reply, State};
use super::wire::{self, invalid_request};
use crate::{account_balance, transfers};
use ridepay_gateway::{
    CreateTransfer, CreateTransferReversal, ListTransferReversals, ListTransfers,
};

/// `POST /v1/transfers`.
pub fn create(state: &State, request: &Request) -> Reply {
    with_faults(state, request, transfer_request, |conn, transfer| {
        let pending_for = state.config.faults.transfer_available;
        transfers::create(conn, &transfer, state.intents.double, pending_for)
            .map(|made| Response::json(200, &wire::transfer_object(&made)))
            .map_err(wire::refusal)
    })
}

fn transfer_request(
    request: &Request,
    idempotency_key: String,
) -> Result<CreateTransfer, Response> {
    let form = Form::parse(request)?;
    // Ridepay's transfers take their source charge's group; this fake
    // makes no other kind.
    if form.param("transfer_group").is_some() {
        return Err(invalid_request(
            400,
            "parameter_unknown",
            "This fake gives a transfer its source charge's transfer_group: send none.",
        ));
    }
    Ok(CreateTransfer {
        idempotency_key,
        amount_cents: form.named_amount("transfers")?,
        currency: form.required("currency")?,
        destination: form.required("destination")?,
        source_transaction: form.required("source_transaction")?,
        metadata: form.metadata(),
    })
}

/// `GET /v1/transfers`: `destination`, `created[gte]`, `transfer_group`,
/// `starting_after`, `limit`; newest first.
pub fn list(state: &State, request: &Request) -> Response {
    let listed = Form::from_query(&request.query).and_then(|query| {
        let list = ListTransfers {
            destination: query.param("destination"),
            created_gte: query.created_gte()?,
            transfer_group: query.param("transfer_group"),
            starting_after: query.param("starting_after"),
            limit: query.limit()?,
        };
        let mut conn = connection(state)?;
        transfers::list(&mut conn, &list, state.intents.double).map_err(wire::refusal)
    });
    match listed {
        Ok(page) => Response::json(200, &wire::transfer_list(&page)),
        Err(refusal) => refusal,
    }
}

/// `POST /v1/transfers/{id}/reversals`.
pub fn reverse(state: &State, request: &Request, id: &str) -> Reply {
    let parse = |request: &Request, idempotency_key: String| {
        let form = Form::parse(request)?;
        Ok(CreateTransferReversal {
            idempotency_key,
            transfer: id.to_owned(),
            amount_cents: form.named_amount("reverses")?,
            metadata: form.metadata(),
        })
    };
    with_faults(state, request, parse, |conn, reversal| {
        transfers::reverse(conn, &reversal, state.intents.double)
            .map(|made| Response::json(200, &wire::transfer_reversal_object(&made)))
            .map_err(wire::refusal)
    })
}

/// `GET /v1/transfers/{id}/reversals`: `starting_after`, `limit`; newest
/// first. A transfer the fake does not hold is Stripe's 404.
pub fn list_reversals(state: &State, request: &Request, id: &str) -> Response {
    let listed = Form::from_query(&request.query).and_then(|query| {
        let list = ListTransferReversals {
            transfer: id.to_owned(),
            starting_after: query.param("starting_after"),
            limit: query.limit()?,
        };
        let mut conn = connection(state)?;
        transfers::list_reversals(&mut conn, &list, state.intents.double).map_err(wire::refusal)
    });
    match listed {
        Ok(Some(page)) => Response::json(200, &wire::transfer_reversal_list(id, &page)),
        Ok(None) => invalid_request(404, "resource_missing", format!("No such transfer: '{id}'")),
        Err(refusal) => refusal,
    }
}

/// `GET /v1/balance`: a connected account's, named by `Stripe-Account`;
/// the platform's own is not kept.
pub fn balance(state: &State, request: &Request) -> Response {
    let Some(account) = request.header("stripe-account") else {
        return invalid_request(
            400,
            "parameter_missing",
            "This fake keeps connected accounts' balances only: send Stripe-Account.",
        );
    };
    let found = connection(state).and_then(|mut conn| {
        account_balance::retrieve(&mut conn, account, state.intents.double).map_err(wire::refusal)
    });
    match found {
        Ok(balance) => Response::json(200, &wire::balance_object(&balance)),
        Err(refusal) => refusal,
    }
}
