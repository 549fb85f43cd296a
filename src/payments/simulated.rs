//! An honest stand-in for Stripe: it keeps its charges in its own table, commits
//! each in its own transaction as an external system would, is idempotent on the
//! caller's key, and treats test sources as Stripe's test mode does.

use std::thread;

use diesel::prelude::*;
use rand::Rng;

use super::gateway::{Charge, ChargeRequest, GatewayError, PaymentGateway};
use crate::config::SimulatedGatewaySettings;
use crate::db::DbPool;
use crate::schema::simulated_charges;

pub struct SimulatedGateway {
    pool: DbPool,
    faults: SimulatedGatewaySettings,
}

/// How a test source behaves.
enum SourceBehaviour {
    Succeeds,
    Declines { decline_code: &'static str },
    Unknown,
}

fn behaviour(source: &str) -> SourceBehaviour {
    match source {
        "tok_chargeDeclined" => SourceBehaviour::Declines {
            decline_code: "generic_decline",
        },
        "tok_chargeDeclinedInsufficientFunds" => SourceBehaviour::Declines {
            decline_code: "insufficient_funds",
        },
        s if s.starts_with("tok_") || s.starts_with("cus_") => SourceBehaviour::Succeeds,
        _ => SourceBehaviour::Unknown,
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = simulated_charges, check_for_backend(diesel::pg::Pg))]
struct SimulatedCharge {
    id: String,
    idempotency_key: String,
    amount_cents: i64,
    currency: String,
    source: String,
    description: Option<String>,
    metadata: serde_json::Value,
    status: String,
    failure_code: Option<String>,
    decline_code: Option<String>,
}

impl SimulatedCharge {
    fn same_parameters(&self, other: &SimulatedCharge) -> bool {
        (self.amount_cents, &self.currency, &self.source)
            == (other.amount_cents, &other.currency, &other.source)
    }

    fn outcome(&self) -> Result<Charge, GatewayError> {
        match &self.failure_code {
            None => Ok(Charge {
                id: self.id.clone(),
                amount_cents: self.amount_cents,
                currency: self.currency.clone(),
            }),
            Some(code) => Err(GatewayError::Declined {
                code: code.clone(),
                decline_code: self.decline_code.clone(),
                message: "Your card was declined.".to_owned(),
            }),
        }
    }
}

impl SimulatedGateway {
    pub fn new(pool: DbPool, faults: SimulatedGatewaySettings) -> Self {
        SimulatedGateway { pool, faults }
    }

    /// Records the attempt (a declined charge is recorded too, as Stripe does),
    /// or finds the one already recorded under the same key.
    fn record(&self, request: &ChargeRequest) -> Result<SimulatedCharge, GatewayError> {
        let declined = match behaviour(&request.source) {
            SourceBehaviour::Succeeds => None,
            SourceBehaviour::Declines { decline_code } => Some(decline_code),
            SourceBehaviour::Unknown => {
                return Err(GatewayError::Rejected {
                    message: format!("No such token: '{}'", request.source),
                })
            }
        };
        let attempt = SimulatedCharge {
            id: format!("ch_sim_{}", uuid::Uuid::new_v4().simple()),
            idempotency_key: request.idempotency_key.clone(),
            amount_cents: request.amount_cents,
            currency: request.currency.clone(),
            source: request.source.clone(),
            description: Some(request.description.clone()),
            metadata: request
                .metadata
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
                .collect::<serde_json::Map<_, _>>()
                .into(),
            status: if declined.is_some() {
                "failed"
            } else {
                "succeeded"
            }
            .to_owned(),
            failure_code: declined.map(|_| "card_declined".to_owned()),
            decline_code: declined.map(str::to_owned),
        };
        let unavailable = |err: &dyn std::fmt::Display| GatewayError::Unavailable {
            reason: format!("simulated gateway storage: {err}"),
            retry_after: None,
        };
        let mut conn = self.pool.get().map_err(|err| unavailable(&err))?;
        conn.transaction(|conn| {
            let inserted = diesel::insert_into(simulated_charges::table)
                .values(&attempt)
                .on_conflict(simulated_charges::idempotency_key)
                .do_nothing()
                .execute(conn)?;
            if inserted == 1 {
                return Ok(attempt.clone());
            }
            simulated_charges::table
                .filter(simulated_charges::idempotency_key.eq(&request.idempotency_key))
                .select(SimulatedCharge::as_select())
                .first(conn)
        })
        .map_err(|err: diesel::result::Error| {
            // A failure before commit charged nothing.
            unavailable(&err)
        })
        .and_then(|stored| {
            if stored.same_parameters(&attempt) {
                Ok(stored)
            } else {
                Err(GatewayError::Misconfigured {
                    reason: format!(
                        "idempotency_error: key {} was used with other parameters",
                        request.idempotency_key
                    ),
                })
            }
        })
    }
}

impl PaymentGateway for SimulatedGateway {
    fn charge(&self, request: &ChargeRequest) -> Result<Charge, GatewayError> {
        if !self.faults.latency.is_zero() {
            thread::sleep(self.faults.latency);
        }
        crate::crash::point(crate::crash::GATEWAY_IN_FLIGHT);
        let mut rng = rand::thread_rng();
        if rng.gen_bool(self.faults.fail_rate) {
            return Err(GatewayError::Unavailable {
                reason: "simulated failure before charging".to_owned(),
                retry_after: None,
            });
        }
        let stored = self.record(request)?;
        if rng.gen_bool(self.faults.lost_response_rate) {
            return Err(GatewayError::OutcomeUnknown {
                reason: format!("simulated lost response after recording {}", stored.id),
            });
        }
        stored.outcome()
    }
}
