//! The writes of the PaymentIntent calls, one statement each: a statement
//! is a transaction of its own, so a change, its events and the answer kept
//! with the caller's key commit or fail together in one round trip, with no
//! `BEGIN` or `COMMIT`. Diesel's DSL cannot write a data-modifying `WITH`,
//! so the SQL is raw here, every value a bind parameter; `cached_as` keeps
//! it prepared all the same.

use chrono::{DateTime, Utc};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::result::DatabaseErrorKind;
use diesel::result::Error::DatabaseError;
use diesel::sql_types::{Array, BigInt, Integer, Jsonb, Nullable, Text, Timestamptz};
use serde_json::Value;

use super::kept_calls::Call;
use super::stored::{event_types, StoredIntent};
use crate::events::{self, ObjectKind};
use ridepay_diesel_helpers::CacheStatement;
use ridepay_gateway::IntentStatus;

/// The statement that writes an intent (`$intent`, which returns its `id`
/// and `gateway`) with the events that announce it ($1 their kind, $2 their
/// ids, $3 their types, in the order of the changes, which `seq` keeps) and
/// the answer kept with the call's key ($4 to $7; none when the key is
/// NULL). Both read `intent`, so neither is written when the intent is not.
macro_rules! statement {
    ($intent:literal) => {
        concat!(
            "WITH intent AS (",
            $intent,
            "), announced AS ( \
                INSERT INTO simulated_events (id, gateway, event_type, object_kind, object_id) \
                SELECT event.id, intent.gateway, event.event_type, $1, intent.id \
                FROM intent, unnest($2, $3) WITH ORDINALITY AS event (id, event_type, position) \
                ORDER BY event.position \
            ), kept AS ( \
                INSERT INTO simulated_intent_calls (idempotency_key, operation, parameters, answer) \
                SELECT $4, $5, $6, $7 FROM intent WHERE $4 IS NOT NULL \
            ) \
            SELECT count(*) AS written FROM intent"
        )
    };
}

#[derive(QueryableByName)]
struct Written {
    #[diesel(sql_type = BigInt)]
    written: i64,
}

/// Whether a statement wrote its intent: false when it did not, or when
/// another call answered under the key first. That call's kept answer then
/// raised a unique violation (once it committed, having been waited for),
/// which undid all the statement did.
fn wrote(result: QueryResult<Written>) -> QueryResult<bool> {
    match result {
        Ok(written) => Ok(written.written == 1),
        Err(DatabaseError(DatabaseErrorKind::UniqueViolation, info))
            if info.constraint_name() == Some("simulated_intent_calls_pkey") =>
        {
            Ok(false)
        }
        Err(err) => Err(err),
    }
}

/// A `statement!`, its first seven parameters bound: the events of
/// `went_through`, and `kept`.
fn statement<'a>(
    sql: &'static str,
    went_through: &[IntentStatus],
    kept: Option<(&'a Call, &'a Value)>,
) -> BoxedSqlQuery<'a, Pg, SqlQuery> {
    let types = event_types(went_through);
    let ids: Vec<String> = types.iter().map(|_| events::new_id()).collect();
    diesel::sql_query(sql)
        .into_boxed()
        .bind::<Text, _>(ObjectKind::PaymentIntent)
        .bind::<Array<Text>, _>(ids)
        .bind::<Array<Text>, _>(types)
        .bind::<Nullable<Text>, _>(kept.map(|(call, _)| call.key))
        .bind::<Nullable<Text>, _>(kept.map(|(call, _)| call.operation))
        .bind::<Nullable<Jsonb>, _>(kept.map(|(call, _)| &call.parameters))
        .bind::<Nullable<Jsonb>, _>(kept.map(|(_, answer)| answer))
}

/// Inserts a new intent, the event of its status, and the call's answer;
/// false when another call answered under the key first.
/// What a create asks that the intent keeps beside what it answers: the
/// customer it is made on, and the `transfer_group` its charge's transfers
/// take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked<'a> {
    pub(crate) customer: Option<&'a str>,
    pub(crate) transfer_group: Option<&'a str>,
}

pub(crate) fn create(
    conn: &mut PgConnection,
    intent: &StoredIntent,
    asked: Asked,
    call: &Call,
    answer: &Value,
) -> QueryResult<bool> {
    let written = statement(
        statement!(
            "INSERT INTO simulated_payment_intents (id, client_secret, amount_cents, \
             amount_capturable_cents, amount_received_cents, currency, customer, payment_method, \
             capture_method, return_url, status, latest_charge, last_error_code, \
             last_error_decline_code, last_error_message, authorization_expires_at, settles_at, \
             metadata, gateway, created_at, overcapture_max_cents, captured_at, transfer_group) \
             VALUES ($8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, \
                 $23, $24, $25, $26, $27, $28, CASE WHEN $12 > 0 THEN now() END, $29) \
             RETURNING id, gateway"
        ),
        &[intent.status],
        Some((call, answer)),
    )
    .bind::<Text, _>(&intent.id)
    .bind::<Text, _>(&intent.client_secret)
    .bind::<BigInt, _>(intent.amount_cents)
    .bind::<BigInt, _>(intent.amount_capturable_cents)
    .bind::<BigInt, _>(intent.amount_received_cents)
    .bind::<Text, _>(&intent.currency)
    .bind::<Nullable<Text>, _>(asked.customer)
    .bind::<Text, _>(&intent.payment_method)
    .bind::<Text, _>(intent.capture_method)
    .bind::<Nullable<Text>, _>(&intent.return_url)
    .bind::<Text, _>(intent.status)
    .bind::<Nullable<Text>, _>(&intent.latest_charge)
    .bind::<Nullable<Text>, _>(&intent.last_error_code)
    .bind::<Nullable<Text>, _>(&intent.last_error_decline_code)
    .bind::<Nullable<Text>, _>(&intent.last_error_message)
    .bind::<Nullable<Timestamptz>, _>(intent.authorization_expires_at)
    .bind::<Nullable<Timestamptz>, _>(intent.settles_at)
    .bind::<Jsonb, _>(&intent.metadata)
    .bind::<Text, _>(intent.gateway)
    .bind::<Timestamptz, _>(intent.created_at)
    .bind::<Nullable<BigInt>, _>(intent.overcapture_max_cents)
    .bind::<Nullable<Text>, _>(asked.transfer_group)
    .cached_as(create)
    .get_result(conn);
    wrote(written)
}

/// Writes `intent` as it became from `version` through `went_through`, with
/// the events of those statuses and `kept`, if the intent is still at the
/// version read: false when it is not, or when another call answered under
/// the key first.
pub(crate) fn change(
    conn: &mut PgConnection,
    intent: &StoredIntent,
    version: DateTime<Utc>,
    went_through: &[IntentStatus],
    kept: Option<(&Call, &Value)>,
) -> QueryResult<bool> {
    let written = statement(
        statement!(
            "UPDATE simulated_payment_intents SET status = $10, amount_cents = $11, \
             amount_capturable_cents = $12, amount_received_cents = $13, latest_charge = $14, \
             last_error_code = $15, last_error_decline_code = $16, last_error_message = $17, \
             cancellation_reason = $18, increments = $19, authorization_expires_at = $20, \
             settles_at = $21, overcapture_max_cents = $22, updated_at = now(), \
             captured_at = COALESCE(captured_at, CASE WHEN $13 > 0 THEN now() END) \
             WHERE id = $8 AND updated_at = $9 \
             RETURNING id, gateway"
        ),
        went_through,
        kept,
    )
    .bind::<Text, _>(&intent.id)
    .bind::<Timestamptz, _>(version)
    .bind::<Text, _>(intent.status)
    .bind::<BigInt, _>(intent.amount_cents)
    .bind::<BigInt, _>(intent.amount_capturable_cents)
    .bind::<BigInt, _>(intent.amount_received_cents)
    .bind::<Nullable<Text>, _>(&intent.latest_charge)
    .bind::<Nullable<Text>, _>(&intent.last_error_code)
    .bind::<Nullable<Text>, _>(&intent.last_error_decline_code)
    .bind::<Nullable<Text>, _>(&intent.last_error_message)
    .bind::<Nullable<Text>, _>(&intent.cancellation_reason)
    .bind::<Integer, _>(intent.increments)
    .bind::<Nullable<Timestamptz>, _>(intent.authorization_expires_at)
    .bind::<Nullable<Timestamptz>, _>(intent.settles_at)
    .bind::<Nullable<BigInt>, _>(intent.overcapture_max_cents)
    .cached_as(change)
    .get_result(conn);
    wrote(written)
}
