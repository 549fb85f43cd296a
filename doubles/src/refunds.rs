//! The doubles' refunds, in `simulated_refunds`: of a PaymentIntent's
//! payment, or of a charge the doubles made through the Charges API. Once per
//! idempotency key, like every POST of theirs; never beyond what the payment
//! took (less the refunds not undone), under the payment's row lock.
//!
//! Refunds of a card behave as in Stripe's test mode: most succeed at once;
//! `pm_card_pendingRefund` is pending, then succeeds; `pm_card_refundFail`
//! succeeds, then fails; ridepay's `pm_card_ridepay_pendingRefundFails` is
//! pending, then fails. A later change comes after [`SETTLES_AFTER`], when
//! the refund is next looked at or swept, with its events.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde_json::json;

use super::events::{self, Double, ObjectKind};
use super::intents::{self, random_id, storage, transaction, Call};
use crate::schema::{simulated_charges, simulated_refunds};
use ridepay_gateway::{GatewayError, Payment, Refund, RefundRequest, RefundState};

/// How long a refund that changes status later takes to.
pub const SETTLES_AFTER: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = simulated_refunds, check_for_backend(diesel::pg::Pg))]
struct StoredRefund {
    id: String,
    charge_id: Option<String>,
    payment_intent: Option<String>,
    amount_cents: i64,
    currency: String,
    reason: Option<String>,
    metadata: serde_json::Value,
    status: RefundState,
    gateway: Double,
    settles_at: Option<DateTime<Utc>>,
    settles_as: Option<RefundState>,
}

impl StoredRefund {
    fn refund(&self) -> Refund {
        Refund {
            id: self.id.clone(),
            payment_intent: self.payment_intent.clone(),
            charge: self.charge_id.clone(),
            amount_cents: self.amount_cents,
            currency: self.currency.clone(),
            status: self.status,
            reason: self.reason.clone(),
            metadata: serde_json::from_value(self.metadata.clone()).unwrap_or_default(),
        }
    }

    /// Inserts the refund made under `key`, with the event Stripe sends.
    fn insert(&self, conn: &mut PgConnection, key: &str) -> Result<(), GatewayError> {
        diesel::insert_into(simulated_refunds::table)
            .values((
                simulated_refunds::id.eq(&self.id),
                simulated_refunds::idempotency_key.eq(key),
                simulated_refunds::payment_intent.eq(&self.payment_intent),
                simulated_refunds::charge_id.eq(&self.charge_id),
                simulated_refunds::amount_cents.eq(self.amount_cents),
                simulated_refunds::currency.eq(&self.currency),
                simulated_refunds::reason.eq(&self.reason),
                simulated_refunds::metadata.eq(&self.metadata),
                simulated_refunds::status.eq(self.status),
                simulated_refunds::gateway.eq(self.gateway),
                simulated_refunds::settles_at.eq(self.settles_at),
                simulated_refunds::settles_as.eq(self.settles_as),
            ))
            .execute(conn)
            .map_err(storage)?;
        if self.status == RefundState::Succeeded {
            self.announce(conn, &["charge.refunded"])
        } else {
            self.announce(conn, &["refund.created"])
        }
    }

    fn announce(&self, conn: &mut PgConnection, event_types: &[&str]) -> Result<(), GatewayError> {
        for event_type in event_types {
            events::record(conn, self.gateway, event_type, ObjectKind::Refund, &self.id)
                .map_err(storage)?;
        }
        Ok(())
    }
}

/// What a payment took, locked for the refund.
struct Paid {
    received_cents: i64,
    currency: String,
    /// The payment method, whose test card says how refunds behave.
    payment_method: Option<String>,
    /// The charge of an intent, which Stripe's refunds name too.
    charge: Option<String>,
}

fn paid(conn: &mut PgConnection, payment: &Payment) -> Result<Paid, GatewayError> {
    let missing = || GatewayError::Rejected {
        message: format!("resource_missing: No such payment: '{}'", payment.id()),
    };
    match payment {
        Payment::Intent(id) => {
            let intent = intents::locked(conn, id)?.ok_or_else(missing)?;
            Ok(Paid {
                received_cents: intent.amount_received_cents,
                currency: intent.currency,
                payment_method: Some(intent.payment_method),
                charge: intent.latest_charge,
            })
        }
        Payment::Charge(id) => {
            let (amount, currency, status): (i64, String, String) = simulated_charges::table
                .find(id)
                .select((
                    simulated_charges::amount_cents,
                    simulated_charges::currency,
                    simulated_charges::status,
                ))
                .for_update()
                .first(conn)
                .optional()
                .map_err(storage)?
                .ok_or_else(missing)?;
            Ok(Paid {
                received_cents: if status == "succeeded" { amount } else { 0 },
                currency,
                payment_method: None,
                charge: Some(id.clone()),
            })
        }
    }
}

/// Refunds `request.amount_cents` of what the payment took, once per key:
/// a key answered already gets its answer again (see `Call::replay`).
pub fn refund(
    conn: &mut PgConnection,
    request: &RefundRequest,
    double: Double,
) -> Result<Refund, GatewayError> {
    let call = Call::new("refund", &request.idempotency_key, request);
    call.answer_judged(
        conn,
        |conn| made(conn, request, double),
        StoredRefund::refund,
        |conn, refund| refund.insert(conn, &request.idempotency_key),
    )
}

/// The refund `request` makes, judged under the payment's row lock, which
/// keeps refunds of one payment from passing each other.
fn made(
    conn: &mut PgConnection,
    request: &RefundRequest,
    double: Double,
) -> Result<StoredRefund, GatewayError> {
    let paid = paid(conn, &request.payment)?;
    let kept: i64 = refunds(conn, &request.payment)?
        .iter()
        .filter(|refund| !refund.status.undone())
        .map(|refund| refund.amount_cents)
        .sum();
    let remaining = paid.received_cents - kept;
    if request.amount_cents > remaining {
        return Err(GatewayError::Rejected {
            message: format!(
                "amount_too_large: Refund amount ({}) is greater than the {remaining} \
                 that remains of the payment",
                request.amount_cents
            ),
        });
    }
    let (status, settles_as) = match paid.payment_method.as_deref() {
        Some("pm_card_pendingRefund") => (RefundState::Pending, Some(RefundState::Succeeded)),
        Some("pm_card_refundFail") => (RefundState::Succeeded, Some(RefundState::Failed)),
        Some("pm_card_ridepay_pendingRefundFails") => {
            (RefundState::Pending, Some(RefundState::Failed))
        }
        _ => (RefundState::Succeeded, None),
    };
    let (payment_intent, charge_id) = match &request.payment {
        Payment::Intent(id) => (Some(id.clone()), paid.charge),
        Payment::Charge(id) => (None, Some(id.clone())),
    };
    let metadata: serde_json::Map<String, serde_json::Value> = request
        .metadata
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    Ok(StoredRefund {
        id: random_id("re_sim_"),
        charge_id,
        payment_intent,
        amount_cents: request.amount_cents,
        currency: paid.currency,
        reason: request.reason.clone(),
        metadata: serde_json::Value::Object(metadata),
        status,
        gateway: double,
        settles_at: settles_as.map(|_| intents::from_now(SETTLES_AFTER)),
        settles_as,
    })
}

type RefundFilter = Box<
    dyn BoxableExpression<
        simulated_refunds::table,
        diesel::pg::Pg,
        SqlType = diesel::sql_types::Nullable<diesel::sql_types::Bool>,
    >,
>;

/// The refunds of one payment, or with `None` of every payment.
fn of_payment(payment: Option<&Payment>) -> RefundFilter {
    match payment {
        Some(Payment::Intent(id)) => Box::new(simulated_refunds::payment_intent.eq(id.clone())),
        Some(Payment::Charge(id)) => Box::new(
            simulated_refunds::charge_id
                .eq(id.clone())
                .and(simulated_refunds::payment_intent.is_null()),
        ),
        None => Box::new(diesel::dsl::sql::<
            diesel::sql_types::Nullable<diesel::sql_types::Bool>,
        >("true")),
    }
}

/// Settles the refunds whose time came (of one payment, or any), with the
/// events Stripe sends: `refund.updated` and `charge.refund.updated` for
/// every change, and `charge.refunded` when one succeeds.
fn settle_due(
    conn: &mut PgConnection,
    payment: Option<&Payment>,
    limit: i64,
) -> Result<usize, GatewayError> {
    let due: Vec<String> = simulated_refunds::table
        .filter(simulated_refunds::settles_at.le(diesel::dsl::now))
        .filter(of_payment(payment))
        .select(simulated_refunds::id)
        .limit(limit)
        .for_update()
        .skip_locked()
        .load(conn)
        .map_err(storage)?;
    for id in &due {
        let settled: StoredRefund = diesel::update(simulated_refunds::table.find(id))
            .set((
                simulated_refunds::status
                    .eq(diesel::dsl::sql::<diesel::sql_types::Text>("settles_as")),
                simulated_refunds::settles_at.eq(None::<DateTime<Utc>>),
                simulated_refunds::settles_as.eq(None::<RefundState>),
            ))
            .returning(StoredRefund::as_returning())
            .get_result(conn)
            .map_err(storage)?;
        let mut announced = vec!["refund.updated", "charge.refund.updated"];
        if settled.status == RefundState::Succeeded {
            announced.push("charge.refunded");
        }
        settled.announce(conn, &announced)?;
    }
    Ok(due.len())
}

fn refunds(conn: &mut PgConnection, payment: &Payment) -> Result<Vec<Refund>, GatewayError> {
    settle_due(conn, Some(payment), i64::MAX)?;
    Ok(simulated_refunds::table
        .filter(of_payment(Some(payment)))
        .order((
            simulated_refunds::created_at.desc(),
            simulated_refunds::id.desc(),
        ))
        .select(StoredRefund::as_select())
        .load(conn)
        .map_err(storage)?
        .iter()
        .map(StoredRefund::refund)
        .collect())
}

/// Every refund of a payment, newest first as Stripe lists them.
pub fn refunds_of(conn: &mut PgConnection, payment: &Payment) -> Result<Vec<Refund>, GatewayError> {
    transaction(conn, |conn| refunds(conn, payment))
}

/// One refund, for the fake's events.
pub fn find(conn: &mut PgConnection, id: &str) -> Result<Option<Refund>, GatewayError> {
    Ok(simulated_refunds::table
        .find(id)
        .select(StoredRefund::as_select())
        .first(conn)
        .optional()
        .map_err(storage)?
        .map(|stored| stored.refund()))
}

/// The doubles' clock: holds that lapsed, payments that settled and
/// refunds that changed, up to `limit` of each, with their events. Returns
/// how many changed.
pub fn sweep(conn: &mut PgConnection, limit: i64) -> Result<usize, GatewayError> {
    let intents = intents::sweep(conn, limit)?;
    let refunds = transaction(conn, |conn| settle_due(conn, None, limit))?;
    events::forget_sent(conn).map_err(storage)?;
    Ok(intents + refunds)
}
