//! The doubles' clock: a hold lapses after its time, a `processing`
//! payment settles, and whatever is due is settled when the intent is next
//! read, or swept.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;

use super::changes::{read_and_change, Change};
use super::errors::storage;
use super::settings::IntentSettings;
use super::stored::{random_id, read, Found, StoredIntent};
use crate::schema::simulated_payment_intents;
use ridepay_gateway::{CaptureMethod, GatewayError, IntentStatus};

/// How long a `processing` payment takes to settle.
pub const PROCESSING_SETTLES_AFTER: Duration = Duration::from_secs(1);

impl Found {
    /// What the doubles' clock did to the intent since it was last looked
    /// at: a hold that lapsed is canceled (`cancellation_reason` automatic),
    /// and a `processing` payment settled, as Stripe would have done by then.
    pub(crate) fn on_the_clock(self) -> Change {
        let Found {
            intent,
            updated_at,
            now,
        } = self;
        let due = |at: Option<DateTime<Utc>>| at.is_some_and(|at| at <= now);
        let mut change = Change {
            version: updated_at,
            intent,
            went_through: Vec::new(),
        };
        let intent = &change.intent;
        if intent.status == IntentStatus::RequiresCapture && due(intent.authorization_expires_at) {
            let lapsed = StoredIntent {
                status: IntentStatus::Canceled,
                cancellation_reason: Some("automatic".to_owned()),
                amount_capturable_cents: 0,
                ..intent.clone()
            };
            change.becomes(lapsed);
        } else if intent.status == IntentStatus::Processing && due(intent.settles_at) {
            let held = intent.capture_method == CaptureMethod::Manual;
            let settled = StoredIntent {
                status: if held {
                    IntentStatus::RequiresCapture
                } else {
                    IntentStatus::Succeeded
                },
                amount_capturable_cents: if held { intent.amount_cents } else { 0 },
                amount_received_cents: if held { 0 } else { intent.amount_cents },
                latest_charge: Some(random_id("ch_sim_")),
                settles_at: None,
                ..intent.clone()
            };
            change.becomes(settled);
        }
        change
    }
}

/// The intents whose time came (up to `limit`), settled as when they are
/// next looked at; returns how many there were.
pub(crate) fn sweep(conn: &mut PgConnection, limit: i64) -> Result<usize, GatewayError> {
    use simulated_payment_intents::dsl as pi;
    let due: Vec<String> = pi::simulated_payment_intents
        .filter(
            pi::status
                .eq(IntentStatus::RequiresCapture)
                .and(pi::authorization_expires_at.le(diesel::dsl::now))
                .or(pi::status
                    .eq(IntentStatus::Processing)
                    .and(pi::settles_at.le(diesel::dsl::now))),
        )
        .select(pi::id)
        .limit(limit)
        .load(conn)
        .map_err(storage)?;
    for id in &due {
        read_and_change(conn, id, read, |_| ())?;
    }
    Ok(due.len())
}

pub(crate) fn from_now(wait: Duration) -> DateTime<Utc> {
    Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default()
}

/// When a hold placed now lapses (an extended one later), in whole
/// seconds, as Stripe's `capture_before`.
pub(crate) fn expiry(settings: &IntentSettings, extended: bool) -> DateTime<Utc> {
    let at = from_now(if extended {
        settings.extended_authorization_ttl
    } else {
        settings.authorization_ttl
    });
    whole_seconds(at)
}

/// `at` in whole seconds, as Stripe's timestamps are.
pub(crate) fn whole_seconds(at: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(at.timestamp(), 0).unwrap_or(at)
}

/// The control that lapses a hold at once, so no test waits a week.
pub fn lapse_now(conn: &mut PgConnection, id: &str) -> Result<(), GatewayError> {
    use simulated_payment_intents::dsl as pi;
    diesel::update(pi::simulated_payment_intents.find(id))
        .set(pi::authorization_expires_at.eq(diesel::dsl::now))
        .execute(conn)
        .map_err(storage)?;
    Ok(())
}
