//! The Charges API: create (with Stripe's idempotency and the fault knobs),
//! retrieve, list.

use std::thread;

use rand::Rng;

use super::http::{Request, Response};
use super::server::{Reply, State};
use super::wire::{self, api_error, charge_answer, charge_object, invalid_request};
use crate::db::DbConn;
use crate::payments::ledger::{self, LedgerError};
use crate::payments::stripe::wire::ListObject;
use crate::payments::{ChargeRequest, RATE_LIMIT_RETRY_AFTER};

/// `POST /v1/charges`.
pub fn create(state: &State, request: &Request) -> Reply {
    let faults = &state.config.faults;
    let mut rng = rand::thread_rng();
    if rng.gen_bool(faults.rate_limit_rate) {
        return Reply::Answer(
            invalid_request(
                429,
                "rate_limit",
                "Too many requests hit the API too quickly.",
            )
            .with_header("Retry-After", RATE_LIMIT_RETRY_AFTER.as_secs().to_string())
            .with_header("Stripe-Should-Retry", "true"),
        );
    }
    let charge = match charge_request(request) {
        Ok(charge) => charge,
        Err(refusal) => return Reply::Answer(refusal),
    };
    let Some(_in_flight) = state.in_flight.enter(&charge.idempotency_key) else {
        return Reply::Answer(wire::error(
            409,
            "idempotency_error",
            Some("idempotency_key_in_use"),
            "There is currently another in-progress request using this Idempotency-Key; \
             retry later.",
        ));
    };
    if !faults.latency.is_zero() {
        thread::sleep(faults.latency);
    }
    if rng.gen_bool(faults.fail_rate) {
        return Reply::Answer(api_error("Simulated failure before charging."));
    }
    let mut conn = match connection(state) {
        Ok(conn) => conn,
        Err(refusal) => return Reply::Answer(refusal),
    };
    let recorded = match ledger::record(&mut conn, &charge) {
        Ok(recorded) => recorded,
        Err(err @ LedgerError::NoSuchSource(_)) => {
            return Reply::Answer(invalid_request(400, "resource_missing", err.to_string()))
        }
        Err(err @ LedgerError::KeyReused(_)) => {
            return Reply::Answer(wire::error(400, "idempotency_error", None, err.to_string()))
        }
        Err(err @ LedgerError::Storage(_)) => return Reply::Answer(api_error(err.to_string())),
    };
    drop(conn);
    // Committed, and then the answer is lost on the way.
    if rng.gen_bool(faults.lost_response_rate) {
        return Reply::HangUp;
    }
    let answer = charge_answer(&recorded.charge);
    Reply::Answer(if recorded.replayed {
        answer.with_header("Idempotent-Replayed", "true")
    } else {
        answer
    })
}

/// `GET /v1/charges/{id}`.
pub fn retrieve(state: &State, id: &str) -> Response {
    let found = connection(state).and_then(|mut conn| {
        ledger::find(&mut conn, id).map_err(|err| api_error(format!("Ledger failed: {err}")))
    });
    match found {
        Ok(Some(charge)) => Response::json(200, &charge_object(&charge)),
        Ok(None) => invalid_request(404, "resource_missing", format!("No such charge: '{id}'")),
        Err(refusal) => refusal,
    }
}

/// `GET /v1/charges?limit=&starting_after=`, newest first.
pub fn list(state: &State, query: &str) -> Response {
    let params: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap_or_default();
    let param = |name: &str| {
        params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    let limit = match param("limit").map(str::parse::<i64>) {
        None => 10,
        Some(Ok(limit)) if (1..=100).contains(&limit) => limit,
        Some(_) => {
            return invalid_request(
                400,
                "parameter_invalid_integer",
                "limit must be an integer between 1 and 100.",
            )
        }
    };
    let starting_after = param("starting_after");
    let page = connection(state).and_then(|mut conn| {
        ledger::list(&mut conn, limit, starting_after)
            .map_err(|err| api_error(format!("Ledger failed: {err}")))
    });
    match page {
        Ok(Some(page)) => Response::json(
            200,
            &ListObject {
                object: "list".to_owned(),
                data: page.charges.iter().map(charge_object).collect(),
                has_more: page.has_more,
                url: "/v1/charges".to_owned(),
            },
        ),
        Ok(None) => invalid_request(
            400,
            "resource_missing",
            format!("No such charge: '{}'", starting_after.unwrap_or_default()),
        ),
        Err(refusal) => refusal,
    }
}

fn connection(state: &State) -> Result<DbConn, Response> {
    state
        .pool
        .get()
        .map_err(|err| api_error(format!("Ledger unavailable: {err}")))
}

/// The charge parameters of a form-encoded request, as Stripe validates them.
fn charge_request(request: &Request) -> Result<ChargeRequest, Response> {
    let form: Vec<(String, String)> =
        serde_urlencoded::from_bytes(&request.body).map_err(|err| {
            invalid_request(
                400,
                "parameter_invalid",
                format!("Invalid form body: {err}"),
            )
        })?;
    let param = |name: &str| {
        form.iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    };
    let missing = |name: &str| {
        invalid_request(
            400,
            "parameter_missing",
            format!("Missing required param: {name}."),
        )
    };
    let amount = param("amount").ok_or_else(|| missing("amount"))?;
    let amount_cents = amount
        .parse::<i64>()
        .ok()
        .filter(|amount| *amount > 0)
        .ok_or_else(|| {
            invalid_request(
                400,
                "parameter_invalid_integer",
                format!("Invalid positive integer: {amount}"),
            )
        })?;
    let currency = param("currency").ok_or_else(|| missing("currency"))?;
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_lowercase()) {
        return Err(invalid_request(
            400,
            "parameter_invalid",
            format!("Invalid currency: {currency}."),
        ));
    }
    let source = param("customer")
        .or_else(|| param("source"))
        .ok_or_else(|| missing("source"))?;
    Ok(ChargeRequest {
        // Stripe makes a charge without a key too; the ledger wants one.
        idempotency_key: request
            .header("idempotency-key")
            .map(str::to_owned)
            .unwrap_or_else(|| format!("fake-unkeyed-{}", uuid::Uuid::new_v4().simple())),
        amount_cents,
        currency,
        source,
        description: param("description").unwrap_or_default(),
        metadata: form
            .iter()
            .filter_map(|(key, value)| {
                let name = key.strip_prefix("metadata[")?.strip_suffix(']')?;
                Some((name.to_owned(), value.clone()))
            })
            .collect(),
    })
}
