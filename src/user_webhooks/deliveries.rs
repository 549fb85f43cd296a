//! A destination's deliveries and their attempts, as its user reads them.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Integer, Nullable, SmallInt, Text, Timestamptz};

use crate::pages::{from_cursor, Cursor};
use crate::public_ids::{DeliveryPublicId, PathId};
use crate::schema::{webhook_deliveries, webhook_events};
use crate::service_error::ServiceError;
use crate::wire::webhook_delivery::{AttemptJson, DeliveryJson};

#[derive(Debug, Queryable)]
struct DeliveryRow {
    id: i64,
    public_id: DeliveryPublicId,
    event_id: String,
    event_type: String,
    status: String,
    next_attempt_at: DateTime<Utc>,
    created_at: DateTime<Utc>,
}

/// Attempts an answer shows per delivery, at most: the newest. Retries by
/// hand add attempts without end, and one answer must not grow with them.
pub const ATTEMPTS_SHOWN: i64 = 10;

#[derive(Debug, QueryableByName)]
struct AttemptRow {
    #[diesel(sql_type = BigInt)]
    delivery_id: i64,
    #[diesel(sql_type = Timestamptz)]
    attempted_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<SmallInt>)]
    http_status: Option<i16>,
    #[diesel(sql_type = Nullable<Text>)]
    error: Option<String>,
    #[diesel(sql_type = Integer)]
    duration_ms: i32,
    /// Every attempt at the delivery, shown or not.
    #[diesel(sql_type = BigInt)]
    total: i64,
}

/// Makes the destination's delivery due at once, whatever came of it (its
/// attempts counted on, so one that fails past the schedule ends `failed`
/// again): whether there is such a delivery.
pub fn requeue(
    conn: &mut PgConnection,
    endpoint_id: i64,
    delivery: PathId<DeliveryPublicId>,
) -> QueryResult<bool> {
    let requeued = diesel::update(
        webhook_deliveries::table
            .filter(
                webhook_deliveries::public_id
                    .nullable()
                    .eq(delivery.public()),
            )
            .filter(webhook_deliveries::endpoint_id.eq(endpoint_id)),
    )
    .set((
        webhook_deliveries::status.eq("pending"),
        webhook_deliveries::next_attempt_at.eq(diesel::dsl::now),
        webhook_deliveries::locked_until.eq(None::<DateTime<Utc>>),
    ))
    .execute(conn)?;
    Ok(requeued == 1)
}

/// One of the destination's deliveries, with its attempts. Deliveries
/// were never shown under an integer: a legacy id names none.
pub fn find(
    conn: &mut PgConnection,
    endpoint_id: i64,
    delivery: PathId<DeliveryPublicId>,
) -> QueryResult<Option<DeliveryJson>> {
    let Some(delivery) = delivery.public() else {
        return Ok(None);
    };
    Ok(select(conn, endpoint_id, Some(delivery), 1, Cursor::Newest)?.pop())
}

/// A page of the destination's deliveries, newest first, from `cursor`,
/// each with its attempts, oldest first; and whether there are more.
pub fn page(
    conn: &mut PgConnection,
    endpoint_id: i64,
    limit: i64,
    cursor: Cursor<DeliveryPublicId>,
) -> Result<(Vec<DeliveryJson>, bool), ServiceError> {
    let cursor = cursor.resolve("delivery", |id| {
        Ok(webhook_deliveries::table
            .filter(webhook_deliveries::public_id.eq(id))
            .filter(webhook_deliveries::endpoint_id.eq(endpoint_id))
            .select(webhook_deliveries::id)
            .first::<i64>(conn)
            .optional()?)
    })?;
    let rows = select(conn, endpoint_id, None, limit + 1, cursor)?;
    Ok(cursor.page(rows, limit))
}

/// Up to `rows` of the destination's deliveries (only `only`, if given)
/// from `cursor`, each with its attempts: newest first, but for
/// `ending_before` oldest first from it.
fn select(
    conn: &mut PgConnection,
    endpoint_id: i64,
    only: Option<DeliveryPublicId>,
    rows: i64,
    cursor: Cursor<i64>,
) -> QueryResult<Vec<DeliveryJson>> {
    let mut query = webhook_deliveries::table
        .inner_join(webhook_events::table)
        .filter(webhook_deliveries::endpoint_id.eq(endpoint_id))
        .limit(rows)
        .select((
            webhook_deliveries::id,
            webhook_deliveries::public_id,
            webhook_deliveries::event_id,
            webhook_events::type_,
            webhook_deliveries::status,
            webhook_deliveries::next_attempt_at,
            webhook_deliveries::created_at,
        ))
        .into_boxed();
    query = from_cursor!(query, webhook_deliveries::id, cursor);
    if let Some(only) = only {
        query = query.filter(webhook_deliveries::public_id.eq(only));
    }
    let deliveries: Vec<DeliveryRow> = query.load(conn)?;
    let ids: Vec<i64> = deliveries.iter().map(|delivery| delivery.id).collect();
    let attempts: Vec<AttemptRow> = diesel::sql_query(
        "SELECT delivery_id, attempted_at, http_status, error, duration_ms, total FROM ( \
             SELECT a.*, \
                    row_number() OVER (PARTITION BY delivery_id ORDER BY id DESC) AS newest, \
                    count(*) OVER (PARTITION BY delivery_id) AS total \
             FROM webhook_attempts a WHERE delivery_id = ANY($1)) shown \
         WHERE newest <= $2 ORDER BY delivery_id, id",
    )
    .bind::<Array<BigInt>, _>(&ids)
    .bind::<BigInt, _>(ATTEMPTS_SHOWN)
    .load(conn)?;
    Ok(deliveries
        .into_iter()
        .map(|delivery| {
            let shown: Vec<&AttemptRow> = attempts
                .iter()
                .filter(|attempt| attempt.delivery_id == delivery.id)
                .collect();
            DeliveryJson {
                attempt_count: shown.first().map_or(0, |attempt| attempt.total),
                attempts: shown
                    .into_iter()
                    .map(|attempt| AttemptJson {
                        attempted_at: attempt.attempted_at,
                        http_status: attempt.http_status,
                        error: attempt.error.clone(),
                        duration_ms: attempt.duration_ms,
                    })
                    .collect(),
                id: delivery.public_id,
                event_id: delivery.event_id,
                event_type: delivery.event_type,
                next_attempt_at: (delivery.status == "pending").then_some(delivery.next_attempt_at),
                status: delivery.status,
                created_at: delivery.created_at,
            }
        })
        .collect())
}
