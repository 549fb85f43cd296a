//! The gateway's PaymentIntents of a window, matched to the rides that
//! record them. One that carries this installation's metadata but that no
//! ride records and no key still works on (an earlier generation that
//! surfaced late, a ride lost at an asynchronous failover) is an orphan:
//! once older than the grace period, its hold is cancelled, or what it
//! captured refunded, under a key derived from its `ridepay_key`, after a
//! tombstone (`payments::released`, whose rows are the audit record of
//! every release: what, how much, when decided and when done). A ride whose state differs from its
//! PaymentIntent's takes the gateway's by the transition events use.

use chrono::{DateTime, Utc};
use diesel::prelude::*;

use super::summary::Summary;
use crate::context::ServiceContext;
use crate::gateway_events::apply::apply_intent;
use crate::idempotency::{RidepayKey, FINISHED};
use crate::payments::lookup::patiently;
use crate::payments::released::{self, Moved, Release};
use crate::payments::{
    CancelIntent, GatewayError, IntentStatus, ListIntents, Payment, PaymentIntent, RefundRequest,
    RefundState, INSTALLATION, RIDEPAY_KEY,
};
use crate::rides::model::Ride;
use crate::schema::{idempotency_keys, rides};
use crate::service_error::ServiceError;

/// How a pass looks at the gateway's PaymentIntents.
#[derive(Debug, Clone, Copy)]
pub struct OrphanSettings {
    /// An intent no ride records is released only once it is older than
    /// this: a request still making it has that long to record it.
    pub grace: chrono::Duration,
    pub dry_run: bool,
}

/// Names the releases in their derived gateway keys.
const CANCEL_PURPOSE: &str = "orphan-cancel";
const REFUND_PURPOSE: &str = "orphan-refund";

/// Lists the intents created since `since`, page by page (`between` runs
/// after each, where the caller renews its lease), and deals with each.
/// Returns where a later pass may start listing: before the oldest intent
/// left undecided (too young, still settling), or the grace period's start.
pub fn pass(
    context: &ServiceContext,
    since: DateTime<Utc>,
    settings: &OrphanSettings,
    summary: &mut Summary,
    between: &mut dyn FnMut() -> Result<(), ServiceError>,
) -> Result<DateTime<Utc>, ServiceError> {
    let now = crate::db::now(&mut *context.pool.get()?)?;
    let graced = now - settings.grace;
    let mut listed_before = graced;
    let mut request = Some(ListIntents::since(since, None));
    while let Some(page_request) = request {
        let page = patiently(|| context.gateway.list_intents(&page_request))?;
        request = page_request.after(&page);
        for intent in &page.intents {
            if let Some(undecided) = look_at(context, intent, graced, settings, summary)? {
                listed_before = listed_before.min(undecided);
            }
        }
        between()?;
    }
    Ok(listed_before)
}

/// Sends again the releases whose tombstone was written but whose answer
/// was not recorded (a pass that stopped between the two): under the same
/// keys, so none is made twice.
pub fn finish_unconfirmed(
    context: &ServiceContext,
    summary: &mut Summary,
) -> Result<(), ServiceError> {
    let pending = released::unconfirmed(&mut *context.pool.get()?)?;
    for release in pending {
        release_at_gateway(context, &release, summary)?;
    }
    Ok(())
}

/// One intent: matched to its ride, left to the key that makes it, or
/// released. Returns its creation time when it is left for a later pass.
fn look_at(
    context: &ServiceContext,
    intent: &PaymentIntent,
    graced: DateTime<Utc>,
    settings: &OrphanSettings,
    summary: &mut Summary,
) -> Result<Option<DateTime<Utc>>, ServiceError> {
    let ours = intent.metadata.get(INSTALLATION) == Some(&context.installation_id.to_string());
    let Some(ridepay_key) = intent
        .metadata
        .get(RIDEPAY_KEY)
        .filter(|_| ours)
        .and_then(|hex_text| RidepayKey::parse(hex_text))
    else {
        return Ok(None);
    };
    let ridepay_key = ridepay_key.to_hex();
    let mut conn = context.pool.get()?;
    if let Some(ride) = recorded_by(&mut conn, &intent.id)? {
        summary.matched += 1;
        if !settings.dry_run {
            conn.transaction(|conn| apply_intent(conn, context, &ride, intent))
                .map_err(|err| {
                    anyhow::anyhow!("ride {} not brought up to date: {err}", ride.public_id)
                })?;
        }
        return Ok(None);
    }
    if key_at_work(&mut conn, &ridepay_key)? {
        // The key's own flow (or reconciliation of it) records it.
        return Ok(None);
    }
    let created = intent.created;
    if created > graced || intent.status == IntentStatus::Processing {
        return Ok(Some(created));
    }
    let Some(release) = release_of(context, intent, ridepay_key)? else {
        return Ok(None);
    };
    if settings.dry_run {
        summary.count_release(&release.action);
        return Ok(None);
    }
    let tombstoned = conn.transaction(|conn| -> Result<bool, ServiceError> {
        released::lock(conn, &release.ridepay_key)?;
        // Looked at again under the lock a request records under.
        if recorded_by(conn, &intent.id)?.is_some() || key_at_work(conn, &release.ridepay_key)? {
            return Ok(false);
        }
        released::tombstone(conn, &release)?;
        Ok(true)
    })?;
    drop(conn);
    if tombstoned {
        release_at_gateway(context, &release, summary)?;
    }
    Ok(None)
}

/// The ride that records the intent, as its fare's or its tip's.
fn recorded_by(conn: &mut PgConnection, intent_id: &str) -> QueryResult<Option<Ride>> {
    rides::table
        .filter(
            rides::payment_intent_id
                .eq(intent_id)
                .or(rides::tip_payment_intent_id.eq(intent_id)),
        )
        .select(Ride::as_select())
        .first(conn)
        .optional()
}

/// Whether an unfinished key of this `ridepay_key` may still record it.
fn key_at_work(conn: &mut PgConnection, ridepay_key: &str) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        idempotency_keys::table
            .filter(idempotency_keys::ridepay_key.eq(ridepay_key))
            .filter(idempotency_keys::recovery_point.ne(FINISHED)),
    ))
    .get_result(conn)
}

/// What releasing the intent takes: a hold cancelled, what a capture kept
/// refunded; `None` when nothing is held or kept.
fn release_of(
    context: &ServiceContext,
    intent: &PaymentIntent,
    ridepay_key: String,
) -> Result<Option<Release>, ServiceError> {
    let release = |action: &str, amount_cents| Release {
        ridepay_key: ridepay_key.clone(),
        payment_intent_id: intent.id.clone(),
        action: action.to_owned(),
        amount_cents,
        currency: intent.currency.clone(),
    };
    Ok(match intent.status {
        IntentStatus::RequiresCapture | IntentStatus::RequiresAction => {
            Some(release("cancel", intent.amount_capturable_cents))
        }
        IntentStatus::Succeeded => {
            let payment = Payment::Intent(intent.id.clone());
            let refunded: i64 = patiently(|| context.gateway.refunds_of(&payment))?
                .iter()
                .filter(|refund| !refund.status.undone())
                .map(|refund| refund.amount_cents)
                .sum();
            let kept = intent.amount_received_cents - refunded;
            (kept > 0).then(|| release("refund", kept))
        }
        _ => None,
    })
}

/// Cancels or refunds at the gateway under the release's own derived key,
/// and records that it did, with an audit record.
fn release_at_gateway(
    context: &ServiceContext,
    release: &Release,
    summary: &mut Summary,
) -> Result<(), ServiceError> {
    let gateway = context.gateway.as_ref();
    let key = |purpose: &str| format!("ridepay2-{purpose}-{}-g0", release.ridepay_key);
    let answer = match release.action.as_str() {
        "cancel" => gateway
            .cancel_intent(&CancelIntent {
                idempotency_key: key(CANCEL_PURPOSE),
                intent_id: release.payment_intent_id.clone(),
                cancellation_reason: "abandoned".to_owned(),
            })
            .map(|_| Moved::default()),
        _ => gateway
            .refund(&RefundRequest {
                idempotency_key: key(REFUND_PURPOSE),
                payment: Payment::Intent(release.payment_intent_id.clone()),
                amount_cents: release.amount_cents,
                reason: Some("duplicate".to_owned()),
                metadata: vec![
                    (INSTALLATION.to_owned(), context.installation_id.to_string()),
                    ("ridepay_released".to_owned(), release.ridepay_key.clone()),
                ],
            })
            .and_then(|refund| match refund.status {
                RefundState::Failed | RefundState::Canceled => Err(GatewayError::Rejected {
                    message: format!("refund {} {}", refund.id, refund.status),
                }),
                // What the payment moved, read as it is now, is posted with
                // the release.
                _ => Ok(match gateway.retrieve_intent(&release.payment_intent_id)? {
                    Some(intent) => Moved::of(&intent, refund.id),
                    None => Moved {
                        refund_id: Some(refund.id),
                        ..Moved::default()
                    },
                }),
            }),
    };
    match answer {
        Ok(moved) => {
            let mut conn = context.pool.get()?;
            released::confirmed(&mut conn, &release.ridepay_key, &moved)?;
            log::warn!(
                "reconciliation released PaymentIntent {} ({} {} {}): no ride records it",
                release.payment_intent_id,
                release.action,
                release.amount_cents,
                release.currency
            );
            summary.count_release(&release.action);
        }
        // Already released (cancelled meanwhile, say): an operator looks.
        Err(GatewayError::Rejected { message }) | Err(GatewayError::Declined { message, .. }) => {
            log::error!(
                "reconciliation cannot release PaymentIntent {}: {message}",
                release.payment_intent_id
            );
            summary.needs_attention += 1;
        }
        // Its tombstone stays unconfirmed: the next pass sends it again,
        // under the same key, so it is made once.
        Err(other) => {
            log::warn!(
                "reconciliation's release of PaymentIntent {} is not confirmed yet: {other}",
                release.payment_intent_id
            );
            summary.unresolved += 1;
        }
    }
    Ok(())
}
