//! The gateway doubles' store: the charges they made, one per idempotency
//! key, in the `simulated_charges` table, and their refunds, one per
//! idempotency key too, in `simulated_refunds`. Both the in-process simulated
//! gateway and `ridepay fake-gateway` keep their charges here, so they treat
//! sources and keys the same way.

use chrono::{DateTime, Utc};
use diesel::prelude::*;

use crate::db::CacheStatement;

use crate::payments::{Charge, ChargeRequest, ChargeState, GatewayError, Refund, RefundRequest};
use crate::schema::{simulated_charges, simulated_refunds};

/// How a source behaves, as in Stripe's test mode.
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

pub const DECLINE_MESSAGE: &str = "Your card was declined.";

/// A charge as the ledger keeps it; a declined one too (as Stripe does), so
/// the same key gives the same decline.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = simulated_charges, check_for_backend(diesel::pg::Pg))]
pub struct StoredCharge {
    pub id: String,
    pub idempotency_key: String,
    pub amount_cents: i64,
    pub currency: String,
    pub source: String,
    pub description: Option<String>,
    pub metadata: serde_json::Value,
    pub status: String,
    pub failure_code: Option<String>,
    pub decline_code: Option<String>,
    pub created_at: DateTime<Utc>,
    pub disputed: bool,
}

#[derive(Insertable)]
#[diesel(table_name = simulated_charges)]
// NULL, not DEFAULT, for a `None`: one SQL text whatever the outcome (db::cached).
#[diesel(treat_none_as_default_value = false)]
struct NewCharge<'a> {
    id: String,
    idempotency_key: &'a str,
    amount_cents: i64,
    currency: &'a str,
    source: &'a str,
    description: &'a str,
    metadata: serde_json::Value,
    status: &'static str,
    failure_code: Option<&'static str>,
    decline_code: Option<&'static str>,
}

/// What recording a charge request found.
#[derive(Debug)]
pub struct Recorded {
    pub charge: StoredCharge,
    /// The key was already used, with the same parameters: this is that charge.
    pub replayed: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Stripe's `invalid_request_error`: nothing recorded.
    #[error("No such token: '{0}'")]
    NoSuchSource(String),
    /// Stripe's `idempotency_error`.
    #[error("Keys for idempotent requests can only be used with the same parameters they were first used with (key {0})")]
    KeyReused(String),
    /// Stripe's `resource_missing` for a refund of an unknown charge.
    #[error("No such charge: '{0}'")]
    NoSuchCharge(String),
    /// Stripe's `charge_already_refunded` / `amount_too_large`: a refund
    /// beyond what remains of the charge (or of a charge that failed).
    #[error(
        "Refund amount ({requested}) is greater than unrefunded amount on charge ({remaining})"
    )]
    RefundTooLarge { requested: i64, remaining: i64 },
    /// Nothing was committed, so nothing was charged.
    #[error("ledger storage: {0}")]
    Storage(#[from] diesel::result::Error),
}

impl From<StoreError> for GatewayError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NoSuchSource(_)
            | StoreError::NoSuchCharge(_)
            | StoreError::RefundTooLarge { .. } => GatewayError::Rejected {
                message: err.to_string(),
            },
            StoreError::KeyReused(_) => GatewayError::Misconfigured {
                reason: format!("idempotency_error: {err}"),
            },
            StoreError::Storage(_) => GatewayError::Unavailable {
                reason: err.to_string(),
                retry_after: None,
            },
        }
    }
}

impl StoredCharge {
    pub fn succeeded(&self) -> bool {
        self.failure_code.is_none()
    }

    /// The charge as the gateway trait reports it.
    pub fn outcome(&self) -> Result<Charge, GatewayError> {
        match &self.failure_code {
            None => Ok(Charge {
                id: self.id.clone(),
                amount_cents: self.amount_cents,
                currency: self.currency.clone(),
            }),
            Some(code) => Err(GatewayError::Declined {
                code: code.clone(),
                decline_code: self.decline_code.clone(),
                message: DECLINE_MESSAGE.to_owned(),
                payment_intent: None,
            }),
        }
    }

    /// Stripe compares every parameter of a replayed request.
    fn same_parameters(&self, request: &ChargeRequest) -> bool {
        (
            self.amount_cents,
            self.currency.as_str(),
            self.source.as_str(),
        ) == (
            request.amount_cents,
            request.currency.as_str(),
            request.source.as_str(),
        ) && self.description.as_deref() == Some(request.description.as_str())
            && self.metadata == metadata_json(request)
    }
}

fn metadata_json(request: &ChargeRequest) -> serde_json::Value {
    pairs_json(&request.metadata)
}

fn pairs_json(pairs: &[(String, String)]) -> serde_json::Value {
    pairs
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Records the charge, or finds the one already recorded under the same key.
/// The INSERT alone is atomic, and a concurrent one with the same key makes it
/// wait for that one's commit, after which the SELECT sees its row: no
/// transaction needed.
pub fn record(conn: &mut PgConnection, request: &ChargeRequest) -> Result<Recorded, StoreError> {
    let declined = match behaviour(&request.source) {
        SourceBehaviour::Succeeds => None,
        SourceBehaviour::Declines { decline_code } => Some(decline_code),
        SourceBehaviour::Unknown => return Err(StoreError::NoSuchSource(request.source.clone())),
    };
    let attempt = NewCharge {
        id: format!("ch_sim_{}", uuid::Uuid::new_v4().simple()),
        idempotency_key: &request.idempotency_key,
        amount_cents: request.amount_cents,
        currency: &request.currency,
        source: &request.source,
        description: &request.description,
        metadata: metadata_json(request),
        status: if declined.is_some() {
            "failed"
        } else {
            "succeeded"
        },
        failure_code: declined.map(|_| "card_declined"),
        decline_code: declined,
    };
    let inserted = diesel::insert_into(simulated_charges::table)
        .values(&attempt)
        .on_conflict(simulated_charges::idempotency_key)
        .do_nothing()
        .returning(StoredCharge::as_returning())
        .cached_as(record)
        .get_result(conn)
        .optional()?;
    let recorded = match inserted {
        Some(charge) => Recorded {
            charge,
            replayed: false,
        },
        None => Recorded {
            charge: simulated_charges::table
                .filter(simulated_charges::idempotency_key.eq(&request.idempotency_key))
                .select(StoredCharge::as_select())
                .first(conn)?,
            replayed: true,
        },
    };
    if !recorded.charge.same_parameters(request) {
        return Err(StoreError::KeyReused(request.idempotency_key.clone()));
    }
    Ok(recorded)
}

pub fn find(conn: &mut PgConnection, id: &str) -> QueryResult<Option<StoredCharge>> {
    simulated_charges::table
        .find(id)
        .select(StoredCharge::as_select())
        .first(conn)
        .optional()
}

/// A page of charges, newest first.
pub struct Page {
    pub charges: Vec<StoredCharge>,
    pub has_more: bool,
}

/// The charges after the charge `starting_after` (a cursor, as Stripe pages);
/// `None` when there is no such charge.
pub fn list(
    conn: &mut PgConnection,
    limit: i64,
    starting_after: Option<&str>,
) -> QueryResult<Option<Page>> {
    use simulated_charges::dsl::{created_at, id};
    let mut query = simulated_charges::table
        .select(StoredCharge::as_select())
        .order((created_at.desc(), id.desc()))
        .limit(limit + 1)
        .into_boxed();
    if let Some(cursor) = starting_after {
        let Some(after) = find(conn, cursor)? else {
            return Ok(None);
        };
        query = query.filter(
            created_at
                .lt(after.created_at)
                .or(created_at.eq(after.created_at).and(id.lt(after.id))),
        );
    }
    let mut charges = query.load(conn)?;
    let has_more = charges.len() as i64 > limit;
    charges.truncate(limit as usize);
    Ok(Some(Page { charges, has_more }))
}

/// A refund as the ledger keeps it.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = simulated_refunds, check_for_backend(diesel::pg::Pg))]
pub struct StoredRefund {
    pub id: String,
    pub idempotency_key: String,
    pub charge_id: String,
    pub amount_cents: i64,
    pub currency: String,
    pub reason: Option<String>,
    pub metadata: serde_json::Value,
    pub status: String,
    pub created_at: DateTime<Utc>,
}

impl StoredRefund {
    /// The refund as the gateway trait reports it.
    pub fn refund(&self) -> Refund {
        Refund {
            id: self.id.clone(),
            charge_id: self.charge_id.clone(),
            amount_cents: self.amount_cents,
            currency: self.currency.clone(),
            reason: self.reason.clone(),
            metadata: serde_json::from_value(self.metadata.clone()).unwrap_or_default(),
        }
    }

    /// Stripe compares every parameter of a replayed request; an omitted
    /// amount meant "what remained" the first time.
    fn same_parameters(&self, request: &RefundRequest) -> bool {
        self.charge_id == request.charge_id
            && request
                .amount_cents
                .is_none_or(|amount| amount == self.amount_cents)
            && self.reason == request.reason
            && self.metadata == pairs_json(&request.metadata)
    }
}

/// What recording a refund request found.
#[derive(Debug)]
pub struct RecordedRefund {
    pub refund: StoredRefund,
    /// The key was already used, with the same parameters: this is that refund.
    pub replayed: bool,
}

/// Records the refund in its own transaction, or finds the one already
/// recorded under the same key. The charge's row lock serialises refunds of
/// one charge, so together they never exceed it.
pub fn record_refund(
    conn: &mut PgConnection,
    request: &RefundRequest,
) -> Result<RecordedRefund, StoreError> {
    let recorded = conn.transaction(|conn| {
        let charge = simulated_charges::table
            .find(&request.charge_id)
            .select(StoredCharge::as_select())
            .for_update()
            .first(conn)
            .optional()?
            .ok_or_else(|| StoreError::NoSuchCharge(request.charge_id.clone()))?;
        let existing = simulated_refunds::table
            .filter(simulated_refunds::idempotency_key.eq(&request.idempotency_key))
            .select(StoredRefund::as_select())
            .first(conn)
            .optional()?;
        if let Some(refund) = existing {
            return Ok(RecordedRefund {
                refund,
                replayed: true,
            });
        }
        let remaining = if charge.succeeded() {
            charge.amount_cents - refunded(conn, &charge.id)?
        } else {
            0
        };
        let amount = request.amount_cents.unwrap_or(remaining);
        if amount <= 0 || amount > remaining {
            return Err(StoreError::RefundTooLarge {
                requested: amount,
                remaining,
            });
        }
        let refund = diesel::insert_into(simulated_refunds::table)
            .values((
                simulated_refunds::id.eq(format!("re_sim_{}", uuid::Uuid::new_v4().simple())),
                simulated_refunds::idempotency_key.eq(&request.idempotency_key),
                simulated_refunds::charge_id.eq(&charge.id),
                simulated_refunds::amount_cents.eq(amount),
                simulated_refunds::currency.eq(&charge.currency),
                simulated_refunds::reason.eq(&request.reason),
                simulated_refunds::metadata.eq(pairs_json(&request.metadata)),
                simulated_refunds::status.eq("succeeded"),
            ))
            .returning(StoredRefund::as_returning())
            .get_result(conn)?;
        Ok(RecordedRefund {
            refund,
            replayed: false,
        })
    })?;
    if !recorded.refund.same_parameters(request) {
        return Err(StoreError::KeyReused(request.idempotency_key.clone()));
    }
    Ok(recorded)
}

fn refunded(conn: &mut PgConnection, charge_id: &str) -> QueryResult<i64> {
    // SUM of a BIGINT is a NUMERIC; a charge has few refunds, so add them here.
    Ok(simulated_refunds::table
        .filter(simulated_refunds::charge_id.eq(charge_id))
        .select(simulated_refunds::amount_cents)
        .load::<i64>(conn)?
        .into_iter()
        .sum())
}

/// The refunds of a charge, oldest first.
pub fn refunds_of(conn: &mut PgConnection, charge_id: &str) -> QueryResult<Vec<StoredRefund>> {
    simulated_refunds::table
        .filter(simulated_refunds::charge_id.eq(charge_id))
        .order((
            simulated_refunds::created_at.asc(),
            simulated_refunds::id.asc(),
        ))
        .select(StoredRefund::as_select())
        .load(conn)
}

/// The card holder's bank disputes the charge (Stripe's test cards do this
/// on their own; here tests and demos call it).
pub fn open_dispute(conn: &mut PgConnection, charge_id: &str) -> QueryResult<bool> {
    let updated = diesel::update(simulated_charges::table.find(charge_id))
        .set(simulated_charges::disputed.eq(true))
        .execute(conn)?;
    Ok(updated == 1)
}

/// A charge with its refunds, as the gateway trait reports it.
pub fn charge_state(conn: &mut PgConnection, id: &str) -> QueryResult<Option<ChargeState>> {
    let Some(charge) = find(conn, id)? else {
        return Ok(None);
    };
    let refunds: Vec<Refund> = refunds_of(conn, id)?
        .iter()
        .map(StoredRefund::refund)
        .collect();
    Ok(Some(ChargeState {
        id: charge.id.clone(),
        amount_cents: charge.amount_cents,
        currency: charge.currency.clone(),
        succeeded: charge.succeeded(),
        amount_refunded_cents: refunds.iter().map(|refund| refund.amount_cents).sum(),
        refunds,
        disputed: charge.disputed,
        metadata: serde_json::from_value(charge.metadata.clone()).unwrap_or_default(),
    }))
}
