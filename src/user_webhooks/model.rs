//! The `webhook_endpoints` table: a user's destinations (and the
//! installation's own, which has no user: `installation`).

use chrono::{DateTime, Utc};
use diesel::prelude::*;

use crate::ids::{KeyId, UserId};
use crate::public_ids::{named, DestinationPublicId, PathId};
use crate::schema::webhook_endpoints;
use crate::wire::destination::DestinationJson;

/// At most this many destinations per user.
pub const MAX_PER_USER: i64 = 16;

/// A destination.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = webhook_endpoints, check_for_backend(diesel::pg::Pg))]
pub struct Destination {
    /// The row's key, for joins; the API never shows it.
    pub id: i64,
    /// The id the API shows: derived from the request that registered it
    /// (random for the installation's own).
    pub public_id: DestinationPublicId,
    pub url: String,
    pub events: Vec<Option<String>>,
    /// `enabled`, or `disabled` (by a 410, after failing for days, or by
    /// its user).
    pub status: String,
    pub disabled_reason: Option<String>,
    pub secret: String,
    pub created_at: DateTime<Utc>,
}

impl Destination {
    /// The destination as the API shows it; its secret only when asked
    /// (the answer that registers it).
    pub fn json(&self, with_secret: bool) -> DestinationJson<'_> {
        DestinationJson {
            id: self.public_id,
            url: &self.url,
            events: self.events.iter().flatten().map(String::as_str).collect(),
            status: &self.status,
            disabled_reason: self.disabled_reason.as_deref(),
            secret: with_secret.then_some(self.secret.as_str()),
            created_at: self.created_at,
        }
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = webhook_endpoints)]
pub struct NewDestination<'a> {
    pub public_id: DestinationPublicId,
    pub user_id: UserId,
    pub idempotency_key_id: KeyId,
    pub url: &'a str,
    pub events: &'a [String],
    pub secret: &'a str,
}

/// Locks the user's destinations for the rest of the transaction (their
/// user's row, `lock_user`), so that two registrations at once count each
/// other; the count.
pub fn lock_for_user(conn: &mut PgConnection, user_id: UserId) -> QueryResult<i64> {
    lock_user(conn, user_id)?;
    webhook_endpoints::table
        .filter(webhook_endpoints::user_id.eq(user_id))
        .count()
        .get_result(conn)
}

/// Locks the user's row for the rest of the transaction, so that what one
/// user may have only so many of is counted by one request at a time. `FOR
/// NO KEY UPDATE`, not `FOR UPDATE`: the claim's transaction inserted the
/// key row first, whose reference holds `FOR KEY SHARE` on the user's row,
/// and two requests asking `FOR UPDATE` on top of that deadlock; `FOR NO
/// KEY UPDATE` does not conflict with `FOR KEY SHARE`, so they queue
/// instead, and the user's other requests insert keys meanwhile.
pub fn lock_user(conn: &mut PgConnection, user_id: UserId) -> QueryResult<()> {
    use crate::schema::users;
    users::table
        .find(user_id)
        .select(users::id)
        .for_no_key_update()
        .first::<i64>(conn)?;
    Ok(())
}

/// Inserts the destination; `None` if its id is taken.
pub fn insert(
    conn: &mut PgConnection,
    endpoint: &NewDestination<'_>,
) -> QueryResult<Option<Destination>> {
    diesel::insert_into(webhook_endpoints::table)
        .values(endpoint)
        .on_conflict(webhook_endpoints::public_id)
        .do_nothing()
        .returning(Destination::as_returning())
        .get_result(conn)
        .optional()
}

/// The user's destinations, oldest first (at most `MAX_PER_USER`).
pub fn list_for_user(conn: &mut PgConnection, user_id: UserId) -> QueryResult<Vec<Destination>> {
    webhook_endpoints::table
        .filter(webhook_endpoints::user_id.eq(user_id))
        .order(webhook_endpoints::id.asc())
        .select(Destination::as_select())
        .load(conn)
}

/// One of the user's destinations; another user's is not found.
pub fn find_for_user(
    conn: &mut PgConnection,
    user_id: UserId,
    id: PathId<DestinationPublicId>,
) -> QueryResult<Option<Destination>> {
    webhook_endpoints::table
        .filter(named!(webhook_endpoints, id))
        .filter(webhook_endpoints::user_id.eq(user_id))
        .select(Destination::as_select())
        .first(conn)
        .optional()
}

/// Deletes one of the user's destinations, and with it its deliveries:
/// whether there was one.
pub fn delete_for_user(
    conn: &mut PgConnection,
    user_id: UserId,
    id: PathId<DestinationPublicId>,
) -> QueryResult<bool> {
    let deleted = diesel::delete(
        webhook_endpoints::table
            .filter(named!(webhook_endpoints, id))
            .filter(webhook_endpoints::user_id.eq(user_id)),
    )
    .execute(conn)?;
    Ok(deleted > 0)
}

/// What a `PATCH` changes: each field given, and for the status what goes
/// with it (re-enabled, a destination's failures are forgotten).
#[derive(Debug, Default, AsChangeset)]
#[diesel(table_name = webhook_endpoints)]
pub struct Changes<'a> {
    pub url: Option<&'a str>,
    pub events: Option<&'a [String]>,
    pub status: Option<&'a str>,
    pub disabled_reason: Option<Option<&'a str>>,
    pub failing_since: Option<Option<DateTime<Utc>>>,
}

impl<'a> Changes<'a> {
    /// Enabled again, or disabled by its user.
    pub fn status(enabled: bool) -> Changes<'a> {
        match enabled {
            true => Changes {
                status: Some("enabled"),
                disabled_reason: Some(None),
                failing_since: Some(None),
                ..Changes::default()
            },
            false => Changes {
                status: Some("disabled"),
                disabled_reason: Some(Some("disabled by its user")),
                ..Changes::default()
            },
        }
    }
}

/// Changes one of the user's destinations; `None` if it is not theirs.
pub fn update_for_user(
    conn: &mut PgConnection,
    user_id: UserId,
    id: PathId<DestinationPublicId>,
    changes: &Changes<'_>,
) -> QueryResult<Option<Destination>> {
    diesel::update(
        webhook_endpoints::table
            .filter(named!(webhook_endpoints, id))
            .filter(webhook_endpoints::user_id.eq(user_id)),
    )
    .set((changes, webhook_endpoints::updated_at.eq(diesel::dsl::now)))
    .returning(Destination::as_returning())
    .get_result(conn)
    .optional()
}

/// A new secret for one of the user's destinations; the one before still
/// signs for `overlap`. Whether there was such a destination.
pub fn roll_secret(
    conn: &mut PgConnection,
    user_id: UserId,
    id: PathId<DestinationPublicId>,
    secret: &str,
    overlap: std::time::Duration,
) -> QueryResult<bool> {
    // On the database's clock, which the sender's claims read.
    let until =
        diesel::dsl::sql::<diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>>("now() + ")
            .bind::<diesel::sql_types::Interval, _>(crate::db::interval(overlap));
    let rolled = diesel::update(
        webhook_endpoints::table
            .filter(named!(webhook_endpoints, id))
            .filter(webhook_endpoints::user_id.eq(user_id)),
    )
    .set((
        webhook_endpoints::previous_secret.eq(webhook_endpoints::secret.nullable()),
        webhook_endpoints::previous_secret_expires_at.eq(until),
        webhook_endpoints::secret.eq(secret),
        webhook_endpoints::updated_at.eq(diesel::dsl::now),
    ))
    .execute(conn)?;
    Ok(rolled == 1)
}
