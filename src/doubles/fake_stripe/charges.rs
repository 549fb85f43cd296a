//! The Charges API: create (with Stripe's idempotency and the fault knobs),
//! retrieve, list.

use std::thread;

use rand::Rng;

use diesel::PgConnection;

use super::http::{Request, Response};
use super::server::{Reply, State};
use super::webhooks;
use super::wire::{self, api_error, charge_answer, charge_object, invalid_request};
use crate::db::DbConn;
use crate::doubles::store::{self, StoreError};
use crate::doubles::RATE_LIMIT_RETRY_AFTER;
use crate::payments::stripe::wire::{ChargeObject, ListObject};
use crate::payments::ChargeRequest;

/// What a committed effect answers, and the webhook event it causes.
pub struct Effect {
    pub answer: Response,
    /// None for a replay: the event went out the first time.
    pub event: Option<(&'static str, ChargeObject)>,
}

/// One write under Stripe's idempotency, with the fault knobs around it: a
/// rate limit, Stripe's 409 for a key in flight, latency, a failure before
/// acting, and the answer lost after `record` committed.
pub fn with_faults<T>(
    state: &State,
    request: &Request,
    parse: impl FnOnce(&Request, String) -> Result<T, Response>,
    record: impl FnOnce(&mut PgConnection, T) -> Result<Effect, Response>,
) -> Reply {
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
    // Stripe acts without a key too; the ledger wants one.
    let key = request
        .header("idempotency-key")
        .map(str::to_owned)
        .unwrap_or_else(|| format!("fake-unkeyed-{}", uuid::Uuid::new_v4().simple()));
    let Some(_in_flight) = state.in_flight.enter(&key) else {
        return Reply::Answer(wire::error(
            409,
            "idempotency_error",
            Some("idempotency_key_in_use"),
            "There is currently another in-progress request using this Idempotency-Key; \
             retry later.",
        ));
    };
    if state.saved_errors.has(&key) {
        return Reply::Answer(
            api_error("Simulated failure, saved under this key.")
                .with_header("Idempotent-Replayed", "true"),
        );
    }
    let parsed = match parse(request, key.clone()) {
        Ok(parsed) => parsed,
        Err(refusal) => return Reply::Answer(refusal),
    };
    if !faults.latency.is_zero() {
        thread::sleep(faults.latency);
    }
    if rng.gen_bool(faults.fail_rate) {
        return Reply::Answer(api_error("Simulated failure before acting."));
    }
    if rng.gen_bool(faults.saved_error_rate) {
        state.saved_errors.save(key);
        return Reply::Answer(api_error("Simulated failure, saved under this key."));
    }
    let mut conn = match connection(state) {
        Ok(conn) => conn,
        Err(refusal) => return Reply::Answer(refusal),
    };
    let effect = match record(&mut conn, parsed) {
        Ok(effect) => effect,
        Err(refusal) => return Reply::Answer(refusal),
    };
    drop(conn);
    if let Some((event_type, object)) = effect.event {
        webhooks::send(state, event_type, &object);
    }
    // Committed, and then the answer is lost on the way.
    if rng.gen_bool(faults.lost_response_rate) {
        return Reply::HangUp;
    }
    Reply::Answer(effect.answer)
}

/// A ledger refusal in Stripe's words.
pub fn refusal(err: StoreError) -> Response {
    match err {
        StoreError::NoSuchSource(_) | StoreError::NoSuchCharge(_) => {
            invalid_request(400, "resource_missing", err.to_string())
        }
        StoreError::RefundTooLarge { .. } => {
            invalid_request(400, "amount_too_large", err.to_string())
        }
        StoreError::KeyReused(_) => wire::error(400, "idempotency_error", None, err.to_string()),
        StoreError::Storage(_) => api_error(err.to_string()),
    }
}

/// Marks a replayed answer as Stripe does.
pub fn replayed(answer: Response, replayed: bool) -> Response {
    if replayed {
        answer.with_header("Idempotent-Replayed", "true")
    } else {
        answer
    }
}

/// `POST /v1/charges`.
pub fn create(state: &State, request: &Request) -> Reply {
    with_faults(state, request, charge_request, |conn, charge| {
        let recorded = store::record(conn, &charge).map_err(refusal)?;
        let event_type = if recorded.charge.succeeded() {
            "charge.succeeded"
        } else {
            "charge.failed"
        };
        let object = charge_object(conn, &recorded.charge).map_err(storage)?;
        Ok(Effect {
            answer: replayed(charge_answer(&recorded.charge, &object), recorded.replayed),
            event: (!recorded.replayed).then_some((event_type, object)),
        })
    })
}

pub fn storage(err: diesel::result::Error) -> Response {
    api_error(format!("Ledger failed: {err}"))
}

/// `GET /v1/charges/{id}`.
pub fn retrieve(state: &State, id: &str) -> Response {
    let found = connection(state).and_then(|mut conn| {
        let Some(charge) = store::find(&mut conn, id).map_err(storage)? else {
            return Ok(None);
        };
        charge_object(&mut conn, &charge).map(Some).map_err(storage)
    });
    match found {
        Ok(Some(object)) => Response::json(200, &object),
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
        let Some(page) = store::list(&mut conn, limit, starting_after).map_err(storage)? else {
            return Ok(None);
        };
        let data = page
            .charges
            .iter()
            .map(|charge| charge_object(&mut conn, charge))
            .collect::<Result<Vec<_>, _>>()
            .map_err(storage)?;
        Ok(Some((data, page.has_more)))
    });
    match page {
        Ok(Some((data, has_more))) => Response::json(
            200,
            &ListObject {
                object: "list".to_owned(),
                data,
                has_more,
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

pub fn connection(state: &State) -> Result<DbConn, Response> {
    state
        .pool
        .get()
        .map_err(|err| api_error(format!("Ledger unavailable: {err}")))
}

/// A form-encoded body, as Stripe reads it.
pub struct Form(Vec<(String, String)>);

impl Form {
    pub fn parse(request: &Request) -> Result<Form, Response> {
        serde_urlencoded::from_bytes(&request.body)
            .map(Form)
            .map_err(|err| {
                invalid_request(
                    400,
                    "parameter_invalid",
                    format!("Invalid form body: {err}"),
                )
            })
    }

    pub fn param(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    }

    pub fn required(&self, name: &str) -> Result<String, Response> {
        self.param(name).ok_or_else(|| {
            invalid_request(
                400,
                "parameter_missing",
                format!("Missing required param: {name}."),
            )
        })
    }

    pub fn positive_amount(amount: &str) -> Result<i64, Response> {
        amount
            .parse::<i64>()
            .ok()
            .filter(|amount| *amount > 0)
            .ok_or_else(|| {
                invalid_request(
                    400,
                    "parameter_invalid_integer",
                    format!("Invalid positive integer: {amount}"),
                )
            })
    }

    /// `metadata[name]=value` pairs.
    pub fn metadata(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .filter_map(|(key, value)| {
                let name = key.strip_prefix("metadata[")?.strip_suffix(']')?;
                Some((name.to_owned(), value.clone()))
            })
            .collect()
    }
}

/// The charge parameters of a form-encoded request, as Stripe validates them.
fn charge_request(request: &Request, idempotency_key: String) -> Result<ChargeRequest, Response> {
    let form = Form::parse(request)?;
    let amount_cents = Form::positive_amount(&form.required("amount")?)?;
    let currency = form.required("currency")?;
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_lowercase()) {
        return Err(invalid_request(
            400,
            "parameter_invalid",
            format!("Invalid currency: {currency}."),
        ));
    }
    let source = match form.param("customer") {
        Some(customer) => customer,
        None => form.required("source")?,
    };
    Ok(ChargeRequest {
        idempotency_key,
        amount_cents,
        currency,
        source,
        description: form.param("description").unwrap_or_default(),
        metadata: form.metadata(),
    })
}
