//! Connected accounts: `POST /v1/accounts` (Express, the `transfers`
//! capability requested) and `POST /v1/account_links`, with Stripe's
//! idempotency and the fault knobs, and `GET /v1/accounts/{id}`.

use super::calls::{connection, with_faults, Form};
use super::http::{Request, Response};
use super::state::{Reply, State};
use super::wire::{self, invalid_request};
use crate::accounts;
use crate::events::Double;
use ridepay_gateway::{CreateAccount, CreateAccountLink, ListAccounts};

/// `POST /v1/accounts`.
pub fn create(state: &State, request: &Request) -> Reply {
    with_faults(state, request, account_request, |conn, account| {
        accounts::create(conn, &account, Double::Fake)
            .map(|made| Response::json(200, &wire::account_object(&made)))
            .map_err(wire::refusal)
    })
}

fn account_request(request: &Request, idempotency_key: String) -> Result<CreateAccount, Response> {
    let form = Form::parse(request)?;
    if form.param("type").as_deref() != Some("express") {
        return Err(invalid_request(
            400,
            "parameter_invalid_string",
            "This fake makes Express accounts only: send type=express.",
        ));
    }
    if form.param("capabilities[transfers][requested]").as_deref() != Some("true") {
        return Err(invalid_request(
            400,
            "parameter_missing",
            "Request the transfers capability: capabilities[transfers][requested]=true.",
        ));
    }
    Ok(CreateAccount {
        idempotency_key,
        email: form.required("email")?,
        country: form.required("country")?,
        metadata: form.metadata(),
    })
}

/// `POST /v1/account_links` (`type=account_onboarding`).
pub fn create_link(state: &State, request: &Request) -> Reply {
    with_faults(state, request, link_request, |conn, link| {
        accounts::create_link(conn, &link, Double::Fake, &state.onboarding_page)
            .map(|made| Response::json(200, &wire::account_link_object(&made)))
            .map_err(wire::refusal)
    })
}

fn link_request(request: &Request, idempotency_key: String) -> Result<CreateAccountLink, Response> {
    let form = Form::parse(request)?;
    if form.param("type").as_deref() != Some("account_onboarding") {
        return Err(invalid_request(
            400,
            "parameter_invalid_string",
            "This fake makes onboarding links only: send type=account_onboarding.",
        ));
    }
    Ok(CreateAccountLink {
        idempotency_key,
        account: form.required("account")?,
        refresh_url: form.required("refresh_url")?,
        return_url: form.required("return_url")?,
    })
}

/// `GET /v1/accounts/{id}`.
pub fn retrieve(state: &State, id: &str) -> Response {
    let found = connection(state).and_then(|mut conn| {
        accounts::retrieve(&mut conn, id, Double::Fake).map_err(wire::refusal)
    });
    match found {
        Ok(Some(account)) => Response::json(200, &wire::account_object(&account)),
        Ok(None) => invalid_request(404, "resource_missing", format!("No such account: '{id}'")),
        Err(refusal) => refusal,
    }
}

/// `GET /v1/accounts` (`created[gte]`, `starting_after`, `limit`).
pub fn list(state: &State, request: &Request) -> Response {
    let listed = Form::from_query(&request.query).and_then(|query| {
        let list = ListAccounts {
            created_gte: query.created_gte()?,
            starting_after: query.param("starting_after"),
            limit: query.limit()?,
        };
        let mut conn = connection(state)?;
        accounts::list(&mut conn, &list, Double::Fake).map_err(wire::refusal)
    });
    match listed {
        Ok(page) => Response::json(200, &wire::account_list(&page)),
        Err(refusal) => refusal,
    }
}
