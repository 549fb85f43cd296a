//! What every write of the fake's API goes through: Stripe's idempotency
//! (a key in flight is a 409), the fault knobs, and the form body.

use std::thread;

use chrono::{DateTime, Utc};
use rand::Rng;

use diesel::PgConnection;

use super::http::{Request, Response};
use super::state::{Reply, State};
use super::wire::{self, api_error, invalid_request, ExpandedCharge};
use crate::intents;
use diesel::r2d2::{ConnectionManager, PooledConnection};
use ridepay_gateway::ListIntents;

/// One write under Stripe's idempotency, with the fault knobs around it: a
/// rate limit, Stripe's 409 for a key in flight, latency, a failure before
/// acting, and the answer lost after `record` committed.
pub fn with_faults<T>(
    state: &State,
    request: &Request,
    parse: impl FnOnce(&Request, String) -> Result<T, Response>,
    record: impl FnOnce(&mut PgConnection, T) -> Result<Response, Response>,
) -> Reply {
    let faults = &state.config.faults;
    let mut rng = rand::thread_rng();
    if rng.gen_bool(faults.rate_limit_rate) {
        return Reply::Answer(wire::rate_limited());
    }
    // Stripe acts without a key too; its records want one.
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
    let mut conn = match connection(state) {
        Ok(conn) => conn,
        Err(refusal) => return Reply::Answer(refusal),
    };
    if let Some(age) = faults.forget_keys {
        if let Err(failure) = intents::forget_older_than(&mut conn, &key, age) {
            return Reply::Answer(wire::refusal(failure));
        }
    }
    // A 500 saved under the key, half of them after acting; a retry gets
    // it again, replayed (`wire::refusal` of the kept `SavedFailure`).
    // A key answered before is answered as before (its saved 500
    // included), whatever the dice say now.
    if rng.gen_bool(faults.saved_error_rate) && !intents::is_kept(&mut conn, &key).unwrap_or(true) {
        if rng.gen_bool(0.5) {
            let _made = record(&mut conn, parsed);
        }
        return Reply::Answer(match intents::save_failure(&mut conn, &key) {
            Ok(()) => api_error("Simulated failure, saved under this key."),
            Err(failure) => wire::refusal(failure),
        });
    }
    let answer = match record(&mut conn, parsed) {
        Ok(answer) => answer,
        Err(refusal) => return Reply::Answer(refusal),
    };
    drop(conn);
    // Committed, and then the answer is lost on the way.
    if rng.gen_bool(faults.lost_response_rate) {
        return Reply::HangUp;
    }
    Reply::Answer(answer)
}

pub fn connection(
    state: &State,
) -> Result<PooledConnection<ConnectionManager<PgConnection>>, Response> {
    state
        .pool
        .get()
        .map_err(|err| api_error(format!("Records unavailable: {err}")))
}

/// A form-encoded body, as Stripe reads it.
pub struct Form(Vec<(String, String)>);

impl Form {
    pub fn parse(request: &Request) -> Result<Form, Response> {
        Form::from_bytes(&request.body)
    }

    /// A GET's query string, read like a form.
    pub fn from_query(query: &str) -> Result<Form, Response> {
        Form::from_bytes(query.as_bytes())
    }

    fn from_bytes(bytes: &[u8]) -> Result<Form, Response> {
        serde_urlencoded::from_bytes(bytes)
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

    /// The `amount`, which Stripe may default and this fake wants named
    /// (`action`: what it does with it, for the refusal's words).
    pub fn named_amount(&self, action: &str) -> Result<i64, Response> {
        let amount = self.param("amount").ok_or_else(|| {
            invalid_request(
                400,
                "parameter_missing",
                format!("This fake {action} a named amount only: send amount."),
            )
        })?;
        Form::positive_amount(&amount)
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

    fn expands(&self, field: &str) -> bool {
        self.0
            .iter()
            .any(|(name, value)| name == "expand[]" && value == field)
    }

    /// A list's `created[gte]`, in whole seconds.
    pub fn created_gte(&self) -> Result<Option<DateTime<Utc>>, Response> {
        self.param("created[gte]")
            .map(|seconds| {
                seconds
                    .parse::<i64>()
                    .ok()
                    .and_then(|seconds| DateTime::from_timestamp(seconds, 0))
                    .ok_or_else(|| {
                        invalid_request(
                            400,
                            "parameter_invalid_integer",
                            format!("Invalid integer: {seconds}"),
                        )
                    })
            })
            .transpose()
    }

    /// A list's `limit`: 1 to 100, 10 when not given, as Stripe's.
    pub fn limit(&self) -> Result<u8, Response> {
        match self.param("limit") {
            Some(limit) => limit
                .parse::<u8>()
                .ok()
                .filter(|limit| (1..=ListIntents::MAX_LIMIT).contains(limit))
                .ok_or_else(|| {
                    invalid_request(
                        400,
                        "parameter_invalid_integer",
                        "limit must be an integer from 1 to 100.",
                    )
                }),
            None => Ok(10),
        }
    }

    /// Whether it asks for the charge itself: `expand[]=latest_charge`, or
    /// a field of the charge, which expands the charge too.
    pub fn expands_latest_charge(&self) -> bool {
        self.expands("latest_charge") || self.expands_balance_transaction()
    }

    /// Whether it asks for the charge's balance transaction
    /// (`expand[]=latest_charge.balance_transaction`).
    pub fn expands_balance_transaction(&self) -> bool {
        self.expands("latest_charge.balance_transaction")
    }

    /// The charge as the answer shows it when it is expanded, `refunded`
    /// what its refunds gave back; `None` when it is not.
    pub fn expanded_charge(&self, refunded: i64) -> Option<ExpandedCharge> {
        self.expands_latest_charge().then(|| ExpandedCharge {
            refunded,
            balance_transaction: self.expands_balance_transaction(),
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
