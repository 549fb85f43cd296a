//! The doubles' PaymentIntents, in `simulated_payment_intents`: the
//! simulated gateway and the fake Stripe both keep theirs here, so both treat
//! test payment methods, keys and holds alike.
//!
//! Test payment methods behave as in Stripe's test mode, and ridepay names
//! its own for the paths Stripe has no card for ([`TEST_PAYMENT_METHODS`]).
//! Every POST is idempotent on its caller's key (`simulated_intent_calls`):
//! the same key and parameters get the first answer again, in the state it
//! had then; other parameters are refused as Stripe refuses them.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use serde::de::DeserializeOwned;

use super::events::{self, Double, ObjectKind};
use super::return_url::valid_return_url;
use crate::schema::{simulated_intent_calls, simulated_payment_intents};
use ridepay_diesel_helpers::{database_now, CacheStatement};
use ridepay_gateway::{
    CancelIntent, CaptureIntent, CaptureMethod, CreateIntent, GatewayError, IncrementIntent,
    IntentStatus, NextAction, PaymentError, PaymentIntent,
};

mod one_statement;

/// The test payment methods and what each does.
pub const TEST_PAYMENT_METHODS: &[(&str, &str)] = &[
    (
        "pm_card_visa",
        "succeeds (and every other pm_card_ method Stripe names a card by)",
    ),
    (
        "pm_card_visa_chargeDeclined",
        "declined: card_declined, generic_decline",
    ),
    (
        "pm_card_chargeDeclinedInsufficientFunds",
        "declined: card_declined, insufficient_funds",
    ),
    (
        "pm_card_authenticationRequired",
        "needs the rider's authentication (requires_action)",
    ),
    (
        "pm_card_ridepay_processing",
        "ridepay's: settles later (processing)",
    ),
    (
        "pm_card_ridepay_incrementDeclined",
        "ridepay's: holds, but a raise of the hold is declined",
    ),
    (
        "pm_card_pendingRefund",
        "pays; a refund is pending, then succeeds",
    ),
    ("pm_card_refundFail", "pays; a refund succeeds, then fails"),
    (
        "pm_card_ridepay_pendingRefundFails",
        "ridepay's: pays; a refund is pending, then fails",
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    Succeeds,
    Declines(&'static str),
    NeedsAuthentication,
    Processing,
    RefusesIncrements,
    Unknown,
}

fn behaviour(payment_method: &str) -> Behaviour {
    match payment_method {
        "pm_card_visa_chargeDeclined" => Behaviour::Declines("generic_decline"),
        "pm_card_chargeDeclinedInsufficientFunds" => Behaviour::Declines("insufficient_funds"),
        "pm_card_authenticationRequired" => Behaviour::NeedsAuthentication,
        "pm_card_ridepay_processing" => Behaviour::Processing,
        "pm_card_ridepay_incrementDeclined" => Behaviour::RefusesIncrements,
        pm if pm.starts_with("pm_card_") => Behaviour::Succeeds,
        _ => Behaviour::Unknown,
    }
}

pub const DECLINE_MESSAGE: &str = "Your card was declined.";

/// How long a `processing` payment takes to settle.
pub const PROCESSING_SETTLES_AFTER: Duration = Duration::from_secs(1);

/// What the doubles need to answer like Stripe.
#[derive(Debug, Clone)]
pub struct IntentSettings {
    /// Which double answers: its records and events are its own.
    pub double: Double,
    /// The authentication page a `requires_action` sends the rider to.
    pub authentication_page: String,
    /// How long a hold lasts before it lapses.
    pub authorization_ttl: Duration,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = simulated_payment_intents, check_for_backend(diesel::pg::Pg))]
pub(super) struct StoredIntent {
    pub(super) id: String,
    client_secret: String,
    amount_cents: i64,
    amount_capturable_cents: i64,
    pub(super) amount_received_cents: i64,
    pub(super) currency: String,
    capture_method: CaptureMethod,
    return_url: Option<String>,
    status: IntentStatus,
    pub(super) latest_charge: Option<String>,
    last_error_code: Option<String>,
    last_error_decline_code: Option<String>,
    last_error_message: Option<String>,
    cancellation_reason: Option<String>,
    pub(super) payment_method: String,
    increments: i32,
    authorization_expires_at: Option<DateTime<Utc>>,
    settles_at: Option<DateTime<Utc>>,
    metadata: Value,
    pub(super) gateway: Double,
    disputed: bool,
}

impl StoredIntent {
    fn intent(&self, settings: &IntentSettings) -> PaymentIntent {
        let next_action = (self.status == IntentStatus::RequiresAction).then(|| NextAction {
            kind: "redirect_to_url".to_owned(),
            url: Some(format!(
                "{}?payment_intent={}&client_secret={}",
                settings.authentication_page, self.id, self.client_secret
            )),
            return_url: self.return_url.clone(),
        });
        let last_payment_error = self.last_error_code.as_ref().map(|code| PaymentError {
            code: Some(code.clone()),
            decline_code: self.last_error_decline_code.clone(),
            message: self.last_error_message.clone(),
        });
        PaymentIntent {
            id: self.id.clone(),
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
        }
    }
}

/// The events Stripe sends as an intent goes through `statuses`, in order.
fn event_types(statuses: &[IntentStatus]) -> Vec<&'static str> {
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
struct Found {
    #[diesel(embed)]
    intent: StoredIntent,
    updated_at: DateTime<Utc>,
    #[diesel(select_expression = database_now(), select_expression_type = database_now)]
    now: DateTime<Utc>,
}

/// An intent as it is to become from the version read, and the statuses it
/// went through on the way, each announced by its event.
struct Change {
    version: DateTime<Utc>,
    intent: StoredIntent,
    went_through: Vec<IntentStatus>,
}

impl Found {
    /// What the doubles' clock did to the intent since it was last looked
    /// at: a hold that lapsed is canceled (`cancellation_reason` automatic),
    /// and a `processing` payment settled, as Stripe would have done by then.
    fn on_the_clock(self) -> Change {
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

impl Change {
    fn becomes(&mut self, intent: StoredIntent) {
        self.went_through.push(intent.status);
        self.intent = intent;
    }

    /// Writes the change, its events and `kept` (a call's answer, kept with
    /// its key) in one statement, guarded by the version read: false when
    /// the intent changed meanwhile or another call answered under the key
    /// first, and nothing was written. Where nothing changed, only `kept` is
    /// written.
    fn write(&self, conn: &mut PgConnection, kept: Option<(&Call, &Value)>) -> QueryResult<bool> {
        if !self.went_through.is_empty() {
            return one_statement::change(conn, self, kept);
        }
        match kept {
            Some((call, answer)) => call.keep(conn, answer),
            None => Ok(true),
        }
    }
}

/// The intent `id`, in one plain SELECT.
fn read(conn: &mut PgConnection, id: &str) -> QueryResult<Option<Found>> {
    simulated_payment_intents::table
        .find(id)
        .select(Found::as_select())
        .cached_as(read)
        .get_result(conn)
        .optional()
}

/// The intent `id`, locked until the caller's transaction ends, so that
/// what it judges on the intent stays true until it commits.
fn read_locked(conn: &mut PgConnection, id: &str) -> QueryResult<Option<Found>> {
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
fn read_for_call(
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

/// How many times a call judges an intent again when another call changed
/// it first: each time, that other call made its change.
const ATTEMPTS: usize = 8;

fn busy(id: &str) -> GatewayError {
    GatewayError::Unavailable {
        reason: format!("simulated gateway: {id} changed under every attempt"),
        retry_after: None,
    }
}

/// The intent `id` as the doubles' clock has it now, and as `act` changes it
/// (or leaves it): what changed is written with its events, guarded by the
/// version read, so that a concurrent change makes `act` judge again.
fn look_at(
    conn: &mut PgConnection,
    id: &str,
    read: fn(&mut PgConnection, &str) -> QueryResult<Option<Found>>,
    act: impl Fn(&mut Change),
) -> Result<Option<StoredIntent>, GatewayError> {
    for _ in 0..ATTEMPTS {
        let Some(found) = read(conn, id).map_err(storage)? else {
            return Ok(None);
        };
        let mut change = found.on_the_clock();
        act(&mut change);
        if change.write(conn, None).map_err(storage)? {
            return Ok(Some(change.intent));
        }
    }
    Err(busy(id))
}

/// The intent `id` now, locked until the caller's transaction ends.
pub(super) fn locked(
    conn: &mut PgConnection,
    id: &str,
) -> Result<Option<StoredIntent>, GatewayError> {
    look_at(conn, id, read_locked, |_| ())
}

/// What a call answered, as kept with its key.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer<T> {
    #[serde(alias = "intent")]
    Made(T),
    Declined {
        code: String,
        decline_code: Option<String>,
        message: String,
        payment_intent: Option<String>,
    },
    Rejected {
        message: String,
    },
}

/// The answer to keep for `result`, as JSON: `None` for a failure that is
/// not final, after which a retry acts afresh.
pub(super) fn to_keep<T: Clone + Serialize>(result: &Result<T, GatewayError>) -> Option<Value> {
    let answer = match result {
        Ok(made) => Answer::Made(made.clone()),
        Err(GatewayError::Declined {
            code,
            decline_code,
            message,
            payment_intent,
        }) => Answer::Declined {
            code: code.clone(),
            decline_code: decline_code.clone(),
            message: message.clone(),
            payment_intent: payment_intent.clone(),
        },
        Err(GatewayError::Rejected { message }) => Answer::Rejected {
            message: message.clone(),
        },
        Err(_) => return None,
    };
    Some(serde_json::to_value(answer).expect("answers serialise"))
}

impl<T> Answer<T> {
    fn into_result(self) -> Result<T, GatewayError> {
        match self {
            Answer::Made(made) => Ok(made),
            Answer::Declined {
                code,
                decline_code,
                message,
                payment_intent,
            } => Err(GatewayError::Declined {
                code,
                decline_code,
                message,
                payment_intent,
            }),
            Answer::Rejected { message } => Err(GatewayError::Rejected { message }),
        }
    }
}

/// A call under its caller's idempotency key, as `simulated_intent_calls`
/// keeps it with its answer.
pub(super) struct Call<'a> {
    key: &'a str,
    operation: &'static str,
    parameters: Value,
}

/// An answer kept with its key, and the call it answered.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = simulated_intent_calls, check_for_backend(diesel::pg::Pg))]
pub(super) struct KeptCall {
    operation: String,
    parameters: Value,
    answer: Value,
}

impl<'a> Call<'a> {
    pub(super) fn new(operation: &'static str, key: &'a str, request: &impl Serialize) -> Self {
        Call {
            key,
            operation,
            parameters: serde_json::to_value(request).expect("requests serialise"),
        }
    }

    /// The answer kept for the key: the same operation and parameters get it
    /// again; others, an error an operator must look at, as Stripe's
    /// `idempotency_error` is.
    pub(super) fn replay<T: DeserializeOwned>(&self, kept: KeptCall) -> Result<T, GatewayError> {
        let key = self.key;
        if kept.operation != self.operation || kept.parameters != self.parameters {
            return Err(GatewayError::Misconfigured {
                reason: format!(
                    "idempotency_error: key {key} was first used for {} with other parameters",
                    kept.operation
                ),
            });
        }
        let answer: Answer<T> =
            serde_json::from_value(kept.answer).map_err(|err| GatewayError::Misconfigured {
                reason: format!("unreadable kept answer for key {key}: {err}"),
            })?;
        answer.into_result()
    }

    pub(super) fn kept(&self, conn: &mut PgConnection) -> QueryResult<Option<KeptCall>> {
        simulated_intent_calls::table
            .find(self.key)
            .select(KeptCall::as_select())
            .cached_as(Self::kept)
            .get_result(conn)
            .optional()
    }

    /// The answer another call kept under the key first, as it answers
    /// this one.
    pub(super) fn answered_meanwhile<T: DeserializeOwned>(
        &self,
        conn: &mut PgConnection,
    ) -> Result<T, GatewayError> {
        match self.kept(conn).map_err(storage)? {
            Some(kept) => self.replay(kept),
            None => Err(GatewayError::Unavailable {
                reason: format!("simulated gateway: no answer kept for key {}", self.key),
                retry_after: None,
            }),
        }
    }

    /// Keeps `answer` with the key, alone: for an answer that changed
    /// nothing, or in the transaction of what it made. False when another
    /// call kept one first (waited for, if it had not committed yet).
    pub(super) fn keep(&self, conn: &mut PgConnection, answer: &Value) -> QueryResult<bool> {
        let kept = diesel::insert_into(simulated_intent_calls::table)
            .values((
                simulated_intent_calls::idempotency_key.eq(self.key),
                simulated_intent_calls::operation.eq(self.operation),
                simulated_intent_calls::parameters.eq(&self.parameters),
                simulated_intent_calls::answer.eq(answer),
            ))
            .on_conflict_do_nothing()
            .returning(simulated_intent_calls::idempotency_key)
            .cached_as(Self::keep)
            .get_result::<String>(conn)
            .optional()?;
        Ok(kept.is_some())
    }

    /// `result`, its answer kept by `write` with what it makes (false when
    /// another call under the key answered first, and `write` wrote
    /// nothing); else that other call's answer.
    fn answer_once<T: Clone + Serialize + DeserializeOwned>(
        &self,
        conn: &mut PgConnection,
        result: Result<T, GatewayError>,
        write: impl FnOnce(&mut PgConnection, &Value) -> QueryResult<bool>,
    ) -> Result<T, GatewayError> {
        let Some(answer) = to_keep(&result) else {
            return result;
        };
        if write(conn, &answer).map_err(storage)? {
            result
        } else {
            self.answered_meanwhile(conn)
        }
    }
}

pub(super) fn storage(err: diesel::result::Error) -> GatewayError {
    GatewayError::Unavailable {
        reason: format!("simulated gateway storage: {err}"),
        retry_after: None,
    }
}

pub(super) fn random_id(prefix: &str) -> String {
    format!("{prefix}{}", hex::encode(rand::random::<[u8; 12]>()))
}

/// A transaction of the doubles: `work`'s error rolls it back and is
/// returned as it is.
pub(super) fn transaction<T>(
    conn: &mut PgConnection,
    work: impl FnOnce(&mut PgConnection) -> Result<T, GatewayError>,
) -> Result<T, GatewayError> {
    enum Failure {
        Gateway(GatewayError),
        Storage(diesel::result::Error),
    }
    impl From<diesel::result::Error> for Failure {
        fn from(err: diesel::result::Error) -> Self {
            Failure::Storage(err)
        }
    }
    conn.transaction(|conn| work(conn).map_err(Failure::Gateway))
        .map_err(|failure| match failure {
            Failure::Gateway(err) => err,
            Failure::Storage(err) => storage(err),
        })
}

/// The intents whose time came (up to `limit`), settled as when they are
/// next looked at; returns how many there were.
pub(super) fn sweep(conn: &mut PgConnection, limit: i64) -> Result<usize, GatewayError> {
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
        look_at(conn, id, read, |_| ())?;
    }
    Ok(due.len())
}

fn no_such_intent(id: &str) -> GatewayError {
    GatewayError::Rejected {
        message: format!("resource_missing: No such payment_intent: '{id}'"),
    }
}

fn unexpected_state(intent: &StoredIntent, action: &str) -> GatewayError {
    GatewayError::Rejected {
        message: format!(
            "payment_intent_unexpected_state: You cannot {action} this PaymentIntent because it \
             has a status of {}.",
            intent.status
        ),
    }
}

fn declined(decline_code: &str, intent_id: &str) -> GatewayError {
    GatewayError::Declined {
        code: "card_declined".to_owned(),
        decline_code: Some(decline_code.to_owned()),
        message: DECLINE_MESSAGE.to_owned(),
        payment_intent: Some(intent_id.to_owned()),
    }
}

/// The intent a create makes, as its test payment method says; `None` for a
/// payment method there is no such thing as.
fn made(request: &CreateIntent, settings: &IntentSettings) -> Option<StoredIntent> {
    let behaviour = behaviour(&request.payment_method);
    let held = request.capture_method == CaptureMethod::Manual;
    let (status, capturable, received) = match behaviour {
        Behaviour::Unknown => return None,
        Behaviour::Declines(_) => (IntentStatus::RequiresPaymentMethod, 0, 0),
        Behaviour::NeedsAuthentication => (IntentStatus::RequiresAction, 0, 0),
        Behaviour::Processing => (IntentStatus::Processing, 0, 0),
        _ if held => (IntentStatus::RequiresCapture, request.amount_cents, 0),
        _ => (IntentStatus::Succeeded, 0, request.amount_cents),
    };
    let decline = match behaviour {
        Behaviour::Declines(decline_code) => Some(decline_code),
        _ => None,
    };
    let metadata: BTreeMap<&str, &str> = request
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let id = random_id("pi_sim_");
    Some(StoredIntent {
        client_secret: format!("{id}_secret_{}", random_id("")),
        id,
        amount_cents: request.amount_cents,
        amount_capturable_cents: capturable,
        amount_received_cents: received,
        currency: request.currency.clone(),
        capture_method: request.capture_method,
        return_url: Some(request.return_url.clone()),
        status,
        latest_charge: (status == IntentStatus::Succeeded).then(|| random_id("ch_sim_")),
        last_error_code: decline.map(|_| "card_declined".to_owned()),
        last_error_decline_code: decline.map(str::to_owned),
        last_error_message: decline.map(|_| DECLINE_MESSAGE.to_owned()),
        cancellation_reason: None,
        payment_method: request.payment_method.clone(),
        increments: 0,
        authorization_expires_at: (status == IntentStatus::RequiresCapture)
            .then(|| expiry(settings)),
        settles_at: (status == IntentStatus::Processing).then(|| after(PROCESSING_SETTLES_AFTER)),
        metadata: json!(metadata),
        gateway: settings.double,
        disputed: false,
    })
}

/// Creates and confirms a PaymentIntent.
pub fn create(
    conn: &mut PgConnection,
    request: &CreateIntent,
    settings: &IntentSettings,
) -> Result<PaymentIntent, GatewayError> {
    // Refused before it runs, as Stripe refuses a parameter: nothing kept.
    if !request.return_url.is_empty() && valid_return_url(&request.return_url).is_none() {
        return Err(GatewayError::Rejected {
            message: "url_invalid: Invalid URL: return_url must be an http or https URL \
                      without control characters"
                .to_owned(),
        });
    }
    let call = Call::new("create", &request.idempotency_key, request);
    let Some(made) = made(request, settings) else {
        let unknown = Err(GatewayError::Rejected {
            message: format!(
                "resource_missing: No such PaymentMethod: '{}'",
                request.payment_method
            ),
        });
        return call.answer_once(conn, unknown, |conn, answer| call.keep(conn, answer));
    };
    let result = match &made.last_error_decline_code {
        Some(decline_code) => Err(declined(decline_code, &made.id)),
        None => Ok(made.intent(settings)),
    };
    call.answer_once(conn, result, |conn, answer| {
        one_statement::create(conn, &made, request.customer.as_deref(), &call, answer)
    })
}

pub(super) fn after(wait: Duration) -> DateTime<Utc> {
    Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default()
}

fn expiry(settings: &IntentSettings) -> DateTime<Utc> {
    after(settings.authorization_ttl)
}

/// A call on an existing PaymentIntent: its name and its key, as kept in
/// `simulated_intent_calls`.
trait IntentCall: Serialize {
    const OPERATION: &'static str;
    fn key(&self) -> &str;
    fn intent_id(&self) -> &str;
}

macro_rules! intent_call {
    ($request:ty, $operation:literal) => {
        impl IntentCall for $request {
            const OPERATION: &'static str = $operation;
            fn key(&self) -> &str {
                &self.idempotency_key
            }
            fn intent_id(&self) -> &str {
                &self.intent_id
            }
        }
    };
}

intent_call!(CaptureIntent, "capture");
intent_call!(IncrementIntent, "increment_authorization");
intent_call!(CancelIntent, "cancel");

/// A call on an existing PaymentIntent, once per key: `change` judges the
/// intent as the clock has it now (a lapsed hold canceled) and says what it
/// becomes, or refuses. One read, of the intent and any answer kept, and
/// one write guarded by the version read: a concurrent change, or a
/// concurrent answer under the key, makes it read again.
fn on_intent<R: IntentCall>(
    conn: &mut PgConnection,
    request: &R,
    settings: &IntentSettings,
    change: impl Fn(&StoredIntent) -> Result<StoredIntent, GatewayError>,
) -> Result<PaymentIntent, GatewayError> {
    let call = Call::new(R::OPERATION, request.key(), request);
    let id = request.intent_id();
    for _ in 0..ATTEMPTS {
        let Some((found, kept)) = read_for_call(conn, id, call.key).map_err(storage)? else {
            let missing = Err(no_such_intent(id));
            return call.answer_once(conn, missing, |conn, answer| call.keep(conn, answer));
        };
        if let Some(kept) = kept {
            return call.replay(kept);
        }
        let mut now = found.on_the_clock();
        let result = change(&now.intent).map(|changed| {
            now.becomes(changed);
            now.intent.intent(settings)
        });
        let Some(answer) = to_keep(&result) else {
            return result;
        };
        if now.write(conn, Some((&call, &answer))).map_err(storage)? {
            return result;
        }
    }
    Err(busy(id))
}

/// Captures `amount_to_capture` of a hold; the rest is released.
pub fn capture(
    conn: &mut PgConnection,
    request: &CaptureIntent,
    settings: &IntentSettings,
) -> Result<PaymentIntent, GatewayError> {
    on_intent(conn, request, settings, |intent| {
        if intent.status != IntentStatus::RequiresCapture {
            return Err(unexpected_state(intent, "capture"));
        }
        if !(1..=intent.amount_capturable_cents).contains(&request.amount_to_capture_cents) {
            return Err(GatewayError::Rejected {
                message: format!(
                    "amount_too_large: amount_to_capture must be at most {}",
                    intent.amount_capturable_cents
                ),
            });
        }
        Ok(StoredIntent {
            status: IntentStatus::Succeeded,
            amount_received_cents: request.amount_to_capture_cents,
            amount_capturable_cents: 0,
            latest_charge: Some(random_id("ch_sim_")),
            ..intent.clone()
        })
    })
}

/// Raises a hold to a new total.
pub fn increment(
    conn: &mut PgConnection,
    request: &IncrementIntent,
    settings: &IntentSettings,
) -> Result<PaymentIntent, GatewayError> {
    on_intent(conn, request, settings, |intent| {
        if intent.status != IntentStatus::RequiresCapture {
            return Err(unexpected_state(intent, "increment the authorization of"));
        }
        if request.amount_cents <= intent.amount_cents || intent.increments >= 10 {
            return Err(GatewayError::Rejected {
                message: format!(
                    "amount must be more than the {} authorized, at most ten times",
                    intent.amount_cents
                ),
            });
        }
        if behaviour(&intent.payment_method) == Behaviour::RefusesIncrements {
            return Err(declined("generic_decline", &intent.id));
        }
        Ok(StoredIntent {
            amount_cents: request.amount_cents,
            amount_capturable_cents: request.amount_cents,
            increments: intent.increments + 1,
            ..intent.clone()
        })
    })
}

/// Cancels a PaymentIntent that is not yet paid, releasing any hold.
pub fn cancel(
    conn: &mut PgConnection,
    request: &CancelIntent,
    settings: &IntentSettings,
) -> Result<PaymentIntent, GatewayError> {
    on_intent(conn, request, settings, |intent| {
        if matches!(
            intent.status,
            IntentStatus::Succeeded | IntentStatus::Canceled
        ) {
            return Err(unexpected_state(intent, "cancel"));
        }
        Ok(StoredIntent {
            status: IntentStatus::Canceled,
            cancellation_reason: Some(request.cancellation_reason.clone()),
            amount_capturable_cents: 0,
            ..intent.clone()
        })
    })
}

/// The PaymentIntent now, a lapsed hold canceled first.
pub fn retrieve(
    conn: &mut PgConnection,
    id: &str,
    settings: &IntentSettings,
) -> Result<Option<PaymentIntent>, GatewayError> {
    Ok(look_at(conn, id, read, |_| ())?.map(|intent| intent.intent(settings)))
}

/// How the rider's authentication ended, on the authentication page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authentication {
    Completed,
    Failed,
}

/// A PaymentIntent as its authentication page sees it, and where the
/// rider goes back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticating {
    pub intent: PaymentIntent,
    pub return_url: Option<String>,
}

impl StoredIntent {
    fn authenticating(&self, settings: &IntentSettings) -> Authenticating {
        Authenticating {
            intent: self.intent(settings),
            return_url: self.return_url.clone(),
        }
    }

    /// The intent once the rider's authentication ended with `outcome`.
    fn authenticated(&self, outcome: Authentication, settings: &IntentSettings) -> StoredIntent {
        match outcome {
            Authentication::Completed if self.capture_method == CaptureMethod::Manual => {
                StoredIntent {
                    status: IntentStatus::RequiresCapture,
                    amount_capturable_cents: self.amount_cents,
                    authorization_expires_at: Some(expiry(settings)),
                    ..self.clone()
                }
            }
            Authentication::Completed => StoredIntent {
                status: IntentStatus::Succeeded,
                amount_received_cents: self.amount_cents,
                latest_charge: Some(random_id("ch_sim_")),
                ..self.clone()
            },
            Authentication::Failed => StoredIntent {
                status: IntentStatus::RequiresPaymentMethod,
                last_error_code: Some("payment_intent_authentication_failure".to_owned()),
                last_error_message: Some(
                    "The provided PaymentMethod has failed authentication.".to_owned(),
                ),
                ..self.clone()
            },
        }
    }
}

/// The intent the authentication page was opened for, when its client
/// secret matches; `None` otherwise, so the page reveals nothing.
pub fn authenticating(
    conn: &mut PgConnection,
    id: &str,
    client_secret: &str,
    settings: &IntentSettings,
) -> Result<Option<Authenticating>, GatewayError> {
    Ok(look_at(conn, id, read, |_| ())?
        .filter(|intent| intent.client_secret == client_secret)
        .map(|intent| intent.authenticating(settings)))
}

/// The rider authenticated (or failed to), on the page `next_action` sent
/// them to, which showed the intent's client secret. Once: an intent no
/// longer waiting is left as it is. `None` for an unknown intent or a secret
/// that does not match.
pub fn authenticate(
    conn: &mut PgConnection,
    id: &str,
    client_secret: &str,
    outcome: Authentication,
    settings: &IntentSettings,
) -> Result<Option<Authenticating>, GatewayError> {
    let shown = |intent: &StoredIntent| intent.client_secret == client_secret;
    let intent = look_at(conn, id, read, |change| {
        if shown(&change.intent) && change.intent.status == IntentStatus::RequiresAction {
            let authenticated = change.intent.authenticated(outcome, settings);
            change.becomes(authenticated);
        }
    })?;
    Ok(intent
        .filter(shown)
        .map(|intent| intent.authenticating(settings)))
}

/// The card holder's bank disputes the intent's charge (Stripe's test cards
/// do this on their own; here tests and demos call it). False for an intent
/// that took no money.
pub fn open_dispute(conn: &mut PgConnection, id: &str) -> Result<bool, GatewayError> {
    transaction(conn, |conn| {
        use simulated_payment_intents::dsl as pi;
        let disputed: Option<Double> = diesel::update(
            pi::simulated_payment_intents
                .filter(pi::id.eq(id))
                .filter(pi::amount_received_cents.gt(0)),
        )
        .set(pi::disputed.eq(true))
        .returning(pi::gateway)
        .get_result(conn)
        .optional()
        .map_err(storage)?;
        let Some(double) = disputed else {
            return Ok(false);
        };
        events::record(
            conn,
            double,
            "charge.dispute.created",
            ObjectKind::Dispute,
            id,
        )
        .map_err(storage)?;
        Ok(true)
    })
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
