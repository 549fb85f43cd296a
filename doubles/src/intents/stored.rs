//! A PaymentIntent as the doubles store it, read (with its version and the
//! database's clock) and changed (with the events that announce it).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde_json::Value;

use super::settings::IntentSettings;
use crate::events::Double;
use crate::schema::{simulated_intent_calls, simulated_payment_intents};
use ridepay_diesel_helpers::{database_now, CacheStatement};
use ridepay_gateway::{CaptureMethod, IntentStatus, NextAction, PaymentError, PaymentIntent};

use super::kept_calls::KeptCall;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = simulated_payment_intents, check_for_backend(diesel::pg::Pg))]
pub(crate) struct StoredIntent {
    pub(crate) id: String,
    pub(crate) client_secret: String,
    pub(crate) amount_cents: i64,
    pub(crate) amount_capturable_cents: i64,
    pub(crate) amount_received_cents: i64,
    pub(crate) currency: String,
    pub(crate) capture_method: CaptureMethod,
    pub(crate) return_url: Option<String>,
    pub(crate) status: IntentStatus,
    pub(crate) latest_charge: Option<String>,
    pub(crate) last_error_code: Option<String>,
    pub(crate) last_error_decline_code: Option<String>,
    pub(crate) last_error_message: Option<String>,
    pub(crate) cancellation_reason: Option<String>,
    pub(crate) payment_method: String,
    pub(crate) increments: i32,
    pub(crate) authorization_expires_at: Option<DateTime<Utc>>,
    pub(crate) settles_at: Option<DateTime<Utc>>,
    pub(crate) metadata: Value,
    pub(crate) gateway: Double,
    pub(crate) disputed: bool,
    /// When it was made, in whole seconds as Stripe's `created`.
    pub(crate) created_at: DateTime<Utc>,
    /// What a hold lets (or let) be captured, when its card allows
    /// overcapture: kept after the capture, as a record of the room.
    pub(crate) overcapture_max_cents: Option<i64>,
}

impl StoredIntent {
    pub(crate) fn intent(&self, settings: &IntentSettings) -> PaymentIntent {
        let next_action = (self.status == IntentStatus::RequiresAction).then(|| NextAction {
            kind: "redirect_to_url".to_owned(),
            url: Some(format!(
                "{}?payment_intent={}&client_secret={}",
                settings.authentication_page, self.id, self.client_secret
            )),
            return_url: self.return_url.clone(),
        });
        let held = self.status == IntentStatus::RequiresCapture;
        let last_payment_error = self.last_error_code.as_ref().map(|code| PaymentError {
            code: Some(code.clone()),
            decline_code: self.last_error_decline_code.clone(),
            message: self.last_error_message.clone(),
        });
        PaymentIntent {
            id: self.id.clone(),
            created: self.created_at,
            status: self.status,
            amount_cents: self.amount_cents,
            amount_capturable_cents: self.amount_capturable_cents,
            amount_received_cents: self.amount_received_cents,
            currency: self.currency.clone(),
            capture_method: self.capture_method,
            client_secret: Some(self.client_secret.clone()),
            next_action,
            latest_charge: self.latest_charge.clone(),
            last_payment_error,
            cancellation_reason: self.cancellation_reason.clone(),
            disputed: self.disputed,
            metadata: serde_json::from_value(self.metadata.clone()).unwrap_or_default(),
            amount_capturable_max_cents: self.overcapture_max_cents.filter(|_| held),
            capture_before: self.authorization_expires_at.filter(|_| held),
            balance_transaction: None,
            replayed: false,
        }
    }
}

/// The events Stripe sends as an intent goes through `statuses`, in order.
pub(crate) fn event_types(statuses: &[IntentStatus]) -> Vec<&'static str> {
    statuses
        .iter()
        .filter_map(|status| match status {
            IntentStatus::RequiresCapture => Some("payment_intent.amount_capturable_updated"),
            IntentStatus::Succeeded => Some("payment_intent.succeeded"),
            IntentStatus::Processing => Some("payment_intent.processing"),
            IntentStatus::RequiresPaymentMethod => Some("payment_intent.payment_failed"),
            IntentStatus::RequiresAction => Some("payment_intent.requires_action"),
            IntentStatus::Canceled => Some("payment_intent.canceled"),
            IntentStatus::RequiresConfirmation => None,
        })
        .collect()
}

/// An intent as read: its version (`updated_at`), which guards the write
/// of a change judged on it, and the database's clock, which times holds
/// and settlements.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = simulated_payment_intents, check_for_backend(diesel::pg::Pg))]
pub(crate) struct Found {
    #[diesel(embed)]
    pub(crate) intent: StoredIntent,
    pub(crate) updated_at: DateTime<Utc>,
    #[diesel(select_expression = database_now(), select_expression_type = database_now)]
    pub(crate) now: DateTime<Utc>,
}

/// The intent `id`, in one plain SELECT.
pub(crate) fn read(conn: &mut PgConnection, id: &str) -> QueryResult<Option<Found>> {
    simulated_payment_intents::table
        .find(id)
        .select(Found::as_select())
        .cached_as(read)
        .get_result(conn)
        .optional()
}

/// The intent `id`, locked until the caller's transaction ends, so that
/// what it judges on the intent stays true until it commits.
pub(crate) fn read_locked(conn: &mut PgConnection, id: &str) -> QueryResult<Option<Found>> {
    simulated_payment_intents::table
        .find(id)
        .select(Found::as_select())
        .for_update()
        .cached_as(read_locked)
        .get_result(conn)
        .optional()
}

/// The intent `id` and the answer kept with `key`, in one plain SELECT;
/// `None` when there is no such intent.
pub(crate) fn read_for_call(
    conn: &mut PgConnection,
    id: &str,
    key: &str,
) -> QueryResult<Option<(Found, Option<KeptCall>)>> {
    simulated_payment_intents::table
        .left_join(
            simulated_intent_calls::table.on(simulated_intent_calls::idempotency_key.eq(key)),
        )
        .filter(simulated_payment_intents::id.eq(id))
        .select((Found::as_select(), Option::<KeptCall>::as_select()))
        .cached_as(read_for_call)
        .get_result(conn)
        .optional()
}

pub(crate) fn random_id(prefix: &str) -> String {
    format!("{prefix}{}", hex::encode(rand::random::<[u8; 12]>()))
}
