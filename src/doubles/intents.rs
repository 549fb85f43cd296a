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
use diesel::sql_types::Text;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use serde::de::DeserializeOwned;

use super::events::{self, Double, ObjectKind};
use crate::db::CacheStatement;
use crate::payments::{
    CancelIntent, CaptureIntent, CaptureMethod, CreateIntent, GatewayError, IncrementIntent,
    IntentStatus, NextAction, PaymentError, PaymentIntent,
};
use crate::schema::{simulated_intent_calls, simulated_payment_intents};

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

    /// Records the event Stripe sends for the status the intent has now.
    fn announce(&self, conn: &mut PgConnection) -> Result<(), GatewayError> {
        let event_type = match self.status {
            IntentStatus::RequiresCapture => "payment_intent.amount_capturable_updated",
            IntentStatus::Succeeded => "payment_intent.succeeded",
            IntentStatus::Processing => "payment_intent.processing",
            IntentStatus::RequiresPaymentMethod => "payment_intent.payment_failed",
            IntentStatus::RequiresAction => "payment_intent.requires_action",
            IntentStatus::Canceled => "payment_intent.canceled",
            IntentStatus::RequiresConfirmation => return Ok(()),
        };
        events::record(
            conn,
            self.gateway,
            event_type,
            ObjectKind::PaymentIntent,
            &self.id,
        )
        .map_err(storage)
    }
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

impl<T: Clone> Answer<T> {
    fn of(result: &Result<T, GatewayError>) -> Option<Answer<T>> {
        match result {
            Ok(made) => Some(Answer::Made(made.clone())),
            Err(GatewayError::Declined {
                code,
                decline_code,
                message,
                payment_intent,
            }) => Some(Answer::Declined {
                code: code.clone(),
                decline_code: decline_code.clone(),
                message: message.clone(),
                payment_intent: payment_intent.clone(),
            }),
            Err(GatewayError::Rejected { message }) => Some(Answer::Rejected {
                message: message.clone(),
            }),
            // Not final: nothing is kept, and a retry acts afresh.
            Err(_) => None,
        }
    }

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

/// Runs `act` once per idempotency key: a call already answered under `key`
/// with the same operation and parameters gets that answer; with others, an
/// error an operator must look at, as Stripe's `idempotency_error` is. A
/// final answer (a decline included) is kept with what `act` wrote; any
/// other failure rolls it all back.
pub(super) fn once_per_key<T: Clone + Serialize + DeserializeOwned>(
    conn: &mut PgConnection,
    key: &str,
    operation: &str,
    parameters: Value,
    act: impl FnOnce(&mut PgConnection) -> Result<T, GatewayError>,
) -> Result<T, GatewayError> {
    transaction(conn, |conn| {
        // Concurrent calls under one key wait for the first one's answer.
        diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind::<Text, _>(key)
            .execute(conn)
            .map_err(storage)?;
        let kept: Option<(String, Value, Value)> = simulated_intent_calls::table
            .find(key)
            .select((
                simulated_intent_calls::operation,
                simulated_intent_calls::parameters,
                simulated_intent_calls::answer,
            ))
            .first(conn)
            .optional()
            .map_err(storage)?;
        if let Some((kept_operation, kept_parameters, answer)) = kept {
            if kept_operation != operation || kept_parameters != parameters {
                return Ok(Err(GatewayError::Misconfigured {
                    reason: format!(
                        "idempotency_error: key {key} was first used for {kept_operation} \
                         with other parameters"
                    ),
                }));
            }
            let answer: Answer<T> =
                serde_json::from_value(answer).map_err(|err| GatewayError::Misconfigured {
                    reason: format!("unreadable kept answer for key {key}: {err}"),
                })?;
            return Ok(answer.into_result());
        }
        let result = act(conn);
        let answer = match Answer::of(&result) {
            Some(answer) => answer,
            None => return result.map(Ok),
        };
        diesel::insert_into(simulated_intent_calls::table)
            .values((
                simulated_intent_calls::idempotency_key.eq(key),
                simulated_intent_calls::operation.eq(operation),
                simulated_intent_calls::parameters.eq(&parameters),
                simulated_intent_calls::answer
                    .eq(serde_json::to_value(&answer).expect("answers serialise")),
            ))
            .execute(conn)
            .map_err(storage)?;
        Ok(result)
    })?
}

/// What the doubles' clock does to an intent whose time came: a hold that
/// lapsed is canceled (`cancellation_reason` automatic), and a `processing`
/// payment settles, as Stripe would have done by then. Done when the intent
/// is next looked at, and by the senders' sweep, so the event goes out too.
fn settle_due(conn: &mut PgConnection, id: &str) -> Result<(), GatewayError> {
    use simulated_payment_intents::dsl as pi;
    let lapsed: Option<StoredIntent> = diesel::update(
        pi::simulated_payment_intents
            .filter(pi::id.eq(id))
            .filter(pi::status.eq(IntentStatus::RequiresCapture))
            .filter(pi::authorization_expires_at.le(diesel::dsl::now)),
    )
    .set((
        pi::status.eq(IntentStatus::Canceled),
        pi::cancellation_reason.eq("automatic"),
        pi::amount_capturable_cents.eq(0),
        pi::updated_at.eq(diesel::dsl::now),
    ))
    .returning(StoredIntent::as_returning())
    .get_result(conn)
    .optional()
    .map_err(storage)?;
    let processed: Option<StoredIntent> = diesel::update(
        pi::simulated_payment_intents
            .filter(pi::id.eq(id))
            .filter(pi::status.eq(IntentStatus::Processing))
            .filter(pi::settles_at.le(diesel::dsl::now)),
    )
    .set((
        pi::status.eq(diesel::dsl::sql::<Text>(
            "CASE capture_method WHEN 'manual' THEN 'requires_capture' ELSE 'succeeded' END",
        )),
        pi::amount_capturable_cents.eq(diesel::dsl::sql::<diesel::sql_types::BigInt>(
            "CASE capture_method WHEN 'manual' THEN amount_cents ELSE 0 END",
        )),
        pi::amount_received_cents.eq(diesel::dsl::sql::<diesel::sql_types::BigInt>(
            "CASE capture_method WHEN 'manual' THEN 0 ELSE amount_cents END",
        )),
        pi::latest_charge.eq(random_id("ch_sim_")),
        pi::settles_at.eq(None::<DateTime<Utc>>),
        pi::updated_at.eq(diesel::dsl::now),
    ))
    .returning(StoredIntent::as_returning())
    .get_result(conn)
    .optional()
    .map_err(storage)?;
    for changed in lapsed.iter().chain(processed.iter()) {
        changed.announce(conn)?;
    }
    Ok(())
}

/// The intents whose time came (up to `limit`), settled as `settle_due`
/// settles one; returns how many there were.
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
        transaction(conn, |conn| settle_due(conn, id))?;
    }
    Ok(due.len())
}

pub(super) fn load(
    conn: &mut PgConnection,
    id: &str,
) -> Result<Option<StoredIntent>, GatewayError> {
    settle_due(conn, id)?;
    simulated_payment_intents::table
        .find(id)
        .select(StoredIntent::as_select())
        .for_update()
        .first(conn)
        .optional()
        .map_err(storage)
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

/// Creates and confirms a PaymentIntent.
pub fn create(
    conn: &mut PgConnection,
    request: &CreateIntent,
    settings: &IntentSettings,
) -> Result<PaymentIntent, GatewayError> {
    let parameters = serde_json::to_value(request).expect("requests serialise");
    once_per_key(
        conn,
        &request.idempotency_key,
        "create",
        parameters,
        |conn| {
            let behaviour = behaviour(&request.payment_method);
            if behaviour == Behaviour::Unknown {
                return Err(GatewayError::Rejected {
                    message: format!(
                        "resource_missing: No such PaymentMethod: '{}'",
                        request.payment_method
                    ),
                });
            }
            let id = random_id("pi_sim_");
            let held = request.capture_method == CaptureMethod::Manual;
            let (status, capturable, received) = match behaviour {
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
            use simulated_payment_intents::dsl as pi;
            let stored: StoredIntent = diesel::insert_into(pi::simulated_payment_intents)
                .values((
                    pi::id.eq(&id),
                    pi::client_secret.eq(format!("{id}_secret_{}", random_id(""))),
                    pi::amount_cents.eq(request.amount_cents),
                    pi::amount_capturable_cents.eq(capturable),
                    pi::amount_received_cents.eq(received),
                    pi::currency.eq(&request.currency),
                    pi::customer.eq(request.customer.as_deref()),
                    pi::payment_method.eq(&request.payment_method),
                    pi::capture_method.eq(request.capture_method),
                    pi::return_url.eq(&request.return_url),
                    pi::status.eq(status),
                    pi::latest_charge
                        .eq((status == IntentStatus::Succeeded).then(|| random_id("ch_sim_"))),
                    pi::last_error_code.eq(decline.map(|_| "card_declined")),
                    pi::last_error_decline_code.eq(decline),
                    pi::last_error_message.eq(decline.map(|_| DECLINE_MESSAGE)),
                    pi::authorization_expires_at
                        .eq((status == IntentStatus::RequiresCapture).then(|| expiry(settings))),
                    pi::settles_at.eq((status == IntentStatus::Processing)
                        .then(|| after(PROCESSING_SETTLES_AFTER))),
                    pi::metadata.eq(json!(metadata)),
                    pi::gateway.eq(settings.double),
                ))
                .returning(StoredIntent::as_returning())
                .cached_as(create)
                .get_result(conn)
                .map_err(storage)?;
            stored.announce(conn)?;
            match decline {
                Some(decline_code) => Err(GatewayError::Declined {
                    code: "card_declined".to_owned(),
                    decline_code: Some(decline_code.to_owned()),
                    message: DECLINE_MESSAGE.to_owned(),
                    payment_intent: Some(stored.id),
                }),
                None => Ok(stored.intent(settings)),
            }
        },
    )
}

pub(super) fn after(wait: Duration) -> DateTime<Utc> {
    Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default()
}

fn expiry(settings: &IntentSettings) -> DateTime<Utc> {
    after(settings.authorization_ttl)
}

/// Saves `changes` (a tuple of assignments) to the intent `id`, and reads
/// it back.
macro_rules! save {
    ($conn:expr, $id:expr, $changes:expr) => {
        diesel::update(simulated_payment_intents::table.find($id))
            .set($changes)
            .returning(StoredIntent::as_returning())
            .get_result::<StoredIntent>($conn)
            .map_err(storage)
    };
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
/// intent as it is now (a lapsed hold already canceled) and saves what it
/// becomes, or refuses.
fn on_intent<R: IntentCall>(
    conn: &mut PgConnection,
    request: &R,
    settings: &IntentSettings,
    change: impl FnOnce(&mut PgConnection, StoredIntent) -> Result<StoredIntent, GatewayError>,
) -> Result<PaymentIntent, GatewayError> {
    let parameters = serde_json::to_value(request).expect("requests serialise");
    let id = request.intent_id();
    once_per_key(conn, request.key(), R::OPERATION, parameters, |conn| {
        let intent = load(conn, id)?.ok_or_else(|| no_such_intent(id))?;
        let changed = change(conn, intent)?;
        changed.announce(conn)?;
        Ok(changed.intent(settings))
    })
}

/// Captures `amount_to_capture` of a hold; the rest is released.
pub fn capture(
    conn: &mut PgConnection,
    request: &CaptureIntent,
    settings: &IntentSettings,
) -> Result<PaymentIntent, GatewayError> {
    on_intent(conn, request, settings, |conn, intent| {
        if intent.status != IntentStatus::RequiresCapture {
            return Err(unexpected_state(&intent, "capture"));
        }
        if !(1..=intent.amount_capturable_cents).contains(&request.amount_to_capture_cents) {
            return Err(GatewayError::Rejected {
                message: format!(
                    "amount_too_large: amount_to_capture must be at most {}",
                    intent.amount_capturable_cents
                ),
            });
        }
        use simulated_payment_intents::dsl as pi;
        save!(
            conn,
            &intent.id,
            (
                pi::status.eq(IntentStatus::Succeeded),
                pi::amount_received_cents.eq(request.amount_to_capture_cents),
                pi::amount_capturable_cents.eq(0),
                pi::latest_charge.eq(random_id("ch_sim_")),
                pi::updated_at.eq(diesel::dsl::now),
            )
        )
    })
}

/// Raises a hold to a new total.
pub fn increment(
    conn: &mut PgConnection,
    request: &IncrementIntent,
    settings: &IntentSettings,
) -> Result<PaymentIntent, GatewayError> {
    on_intent(conn, request, settings, |conn, intent| {
        if intent.status != IntentStatus::RequiresCapture {
            return Err(unexpected_state(&intent, "increment the authorization of"));
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
            return Err(GatewayError::Declined {
                code: "card_declined".to_owned(),
                decline_code: Some("generic_decline".to_owned()),
                message: DECLINE_MESSAGE.to_owned(),
                payment_intent: Some(intent.id),
            });
        }
        use simulated_payment_intents::dsl as pi;
        save!(
            conn,
            &intent.id,
            (
                pi::amount_cents.eq(request.amount_cents),
                pi::amount_capturable_cents.eq(request.amount_cents),
                pi::increments.eq(pi::increments + 1),
                pi::updated_at.eq(diesel::dsl::now),
            )
        )
    })
}

/// Cancels a PaymentIntent that is not yet paid, releasing any hold.
pub fn cancel(
    conn: &mut PgConnection,
    request: &CancelIntent,
    settings: &IntentSettings,
) -> Result<PaymentIntent, GatewayError> {
    on_intent(conn, request, settings, |conn, intent| {
        if matches!(
            intent.status,
            IntentStatus::Succeeded | IntentStatus::Canceled
        ) {
            return Err(unexpected_state(&intent, "cancel"));
        }
        use simulated_payment_intents::dsl as pi;
        save!(
            conn,
            &intent.id,
            (
                pi::status.eq(IntentStatus::Canceled),
                pi::cancellation_reason.eq(&request.cancellation_reason),
                pi::amount_capturable_cents.eq(0),
                pi::updated_at.eq(diesel::dsl::now),
            )
        )
    })
}

/// The PaymentIntent now, a lapsed hold canceled first.
pub fn retrieve(
    conn: &mut PgConnection,
    id: &str,
    settings: &IntentSettings,
) -> Result<Option<PaymentIntent>, GatewayError> {
    transaction(conn, |conn| {
        Ok(load(conn, id)?.map(|intent| intent.intent(settings)))
    })
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
}

/// The intent the authentication page was opened for, when its client
/// secret matches; `None` otherwise, so the page reveals nothing.
pub fn authenticating(
    conn: &mut PgConnection,
    id: &str,
    client_secret: &str,
    settings: &IntentSettings,
) -> Result<Option<Authenticating>, GatewayError> {
    transaction(conn, |conn| {
        Ok(load(conn, id)?
            .filter(|intent| intent.client_secret == client_secret)
            .map(|intent| intent.authenticating(settings)))
    })
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
    transaction(conn, |conn| {
        let Some(intent) = load(conn, id)?.filter(|intent| intent.client_secret == client_secret)
        else {
            return Ok(None);
        };
        if intent.status != IntentStatus::RequiresAction {
            return Ok(Some(intent.authenticating(settings)));
        }
        use simulated_payment_intents::dsl as pi;
        let held = intent.capture_method == CaptureMethod::Manual;
        let stored: StoredIntent = match outcome {
            Authentication::Completed if held => save!(
                conn,
                &intent.id,
                (
                    pi::status.eq(IntentStatus::RequiresCapture),
                    pi::amount_capturable_cents.eq(intent.amount_cents),
                    pi::authorization_expires_at.eq(Some(expiry(settings))),
                    pi::updated_at.eq(diesel::dsl::now),
                )
            ),
            Authentication::Completed => save!(
                conn,
                &intent.id,
                (
                    pi::status.eq(IntentStatus::Succeeded),
                    pi::amount_received_cents.eq(intent.amount_cents),
                    pi::latest_charge.eq(random_id("ch_sim_")),
                    pi::updated_at.eq(diesel::dsl::now),
                )
            ),
            Authentication::Failed => save!(
                conn,
                &intent.id,
                (
                    pi::status.eq(IntentStatus::RequiresPaymentMethod),
                    pi::last_error_code.eq("payment_intent_authentication_failure"),
                    pi::last_error_message
                        .eq("The provided PaymentMethod has failed authentication."),
                    pi::updated_at.eq(diesel::dsl::now),
                )
            ),
        }?;
        stored.announce(conn)?;
        Ok(Some(stored.authenticating(settings)))
    })
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
