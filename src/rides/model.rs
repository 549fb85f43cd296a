//! The `rides` table: the read model, the insert model and the queries.

use chrono::{DateTime, Utc};
use diesel::prelude::*;

use crate::db::CacheStatement;
use serde::Serialize;
use utoipa::ToSchema;

use crate::ids::{KeyId, RideId, UserId};
use crate::schema::rides;

crate::text_enum! {
    /// A ride's payment status, stored as text (with a CHECK).
    pub enum RideStatus {
        Pending = "pending",
        Charged = "charged",
        PaymentDeclined = "payment_declined",
        PaymentFailed = "payment_failed",
        Refunded = "refunded",
        Disputed = "disputed",
    }
}

/// A ride and the state of its payment.
#[derive(Debug, Clone, Queryable, Selectable, Serialize, ToSchema)]
#[diesel(table_name = rides, check_for_backend(diesel::pg::Pg))]
pub struct Ride {
    #[schema(value_type = i64)]
    pub id: RideId,
    #[serde(skip)]
    pub user_id: UserId,
    #[serde(skip)]
    pub idempotency_key_id: Option<KeyId>,
    pub origin_lat: f64,
    pub origin_lon: f64,
    pub target_lat: f64,
    pub target_lon: f64,
    pub amount_cents: i64,
    pub amount_refunded_cents: i64,
    pub currency: String,
    #[serde(skip)]
    pub payment_source: String,
    /// `pending`, `charged`, `payment_declined`, `payment_failed`, `refunded`
    /// or `disputed`.
    #[schema(value_type = String, pattern = "^(pending|charged|payment_declined|payment_failed|refunded|disputed)$")]
    pub status: RideStatus,
    /// The gateway's charge, once charged.
    pub charge_id: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl Ride {
    /// The ride JSON of the contract.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a ride always serialises")
    }

    pub fn location(&self) -> String {
        format!("/api/rides/{}", self.id)
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = rides)]
pub struct NewRide<'a> {
    pub user_id: UserId,
    pub idempotency_key_id: KeyId,
    pub origin_lat: f64,
    pub origin_lon: f64,
    pub target_lat: f64,
    pub target_lon: f64,
    pub amount_cents: i64,
    pub currency: &'a str,
    pub payment_source: &'a str,
}

pub fn insert(conn: &mut PgConnection, ride: &NewRide<'_>) -> QueryResult<Ride> {
    diesel::insert_into(rides::table)
        .values(ride)
        .returning(Ride::as_returning())
        .cached_as(insert)
        .get_result(conn)
}

/// The ride created under an idempotency key row.
pub fn find_by_key(conn: &mut PgConnection, key_id: KeyId) -> QueryResult<Ride> {
    rides::table
        .filter(rides::idempotency_key_id.eq(key_id))
        .select(Ride::as_select())
        .first(conn)
}

pub fn find_ride(conn: &mut PgConnection, id: RideId) -> QueryResult<Ride> {
    rides::table.find(id).select(Ride::as_select()).first(conn)
}

/// One of the user's rides; another user's ride is simply not found.
pub fn find_for_user(
    conn: &mut PgConnection,
    user_id: UserId,
    id: RideId,
) -> QueryResult<Option<Ride>> {
    rides::table
        .filter(rides::id.eq(id))
        .filter(rides::user_id.eq(user_id))
        .select(Ride::as_select())
        .first(conn)
        .optional()
}

/// Up to `limit + 1` of the user's rides, newest first, older than `before_id`;
/// the extra row tells the caller whether there are more.
pub fn list_for_user(
    conn: &mut PgConnection,
    user_id: UserId,
    limit: i64,
    before_id: Option<RideId>,
) -> QueryResult<Vec<Ride>> {
    let mut query = rides::table
        .filter(rides::user_id.eq(user_id))
        .select(Ride::as_select())
        .order(rides::id.desc())
        .limit(limit + 1)
        .into_boxed();
    if let Some(before_id) = before_id {
        query = query.filter(rides::id.lt(before_id));
    }
    query.load(conn)
}

/// Moves a pending ride to `status`, recording the charge if there is one.
pub fn settle(
    conn: &mut PgConnection,
    ride_id: RideId,
    status: RideStatus,
    charge_id: Option<&str>,
) -> QueryResult<Ride> {
    diesel::update(
        rides::table
            .filter(rides::id.eq(ride_id))
            .filter(rides::status.eq(RideStatus::Pending.as_str())),
    )
    .set((
        rides::status.eq(status.as_str()),
        rides::charge_id.eq(charge_id),
        rides::updated_at.eq(diesel::dsl::now),
    ))
    .returning(Ride::as_returning())
    .cached_as(settle)
    .get_result(conn)
}
