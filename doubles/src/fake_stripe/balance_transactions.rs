//! The balance's list, `GET /v1/balance_transactions`: `created[gte]`,
//! `source`, `starting_after` and `limit`, newest first.

use super::calls::{connection, Form};
use super::http::{Request, Response};
use super::state::State;
use super::wire;
use crate::balance;
use ridepay_gateway::ListBalanceTransactions;

pub fn list(state: &State, request: &Request) -> Response {
    let listed = Form::from_query(&request.query).and_then(|query| {
        let list = ListBalanceTransactions {
            created_gte: query.created_gte()?,
            source: query.param("source"),
            starting_after: query.param("starting_after"),
            limit: query.limit()?,
        };
        let mut conn = connection(state)?;
        balance::list(&mut conn, &list, state.intents.double).map_err(wire::refusal)
    });
    match listed {
        Ok(page) => Response::json(200, &wire::balance_transaction_list(&page)),
        Err(refusal) => refusal,
    }
}
