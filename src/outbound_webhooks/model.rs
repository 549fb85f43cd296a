//! The `webhook_endpoints` table: a user's destinations.

use chrono::{DateTime, Utc};
use diesel::prelude::*;

use crate::ids::{KeyId, UserId};
use crate::schema::webhook_endpoints;
use crate::wire::webhook_endpoint::WebhookEndpointJson;

/// At most this many destinations per user.
pub const MAX_PER_USER: i64 = 16;

/// A destination.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = webhook_endpoints, check_for_backend(diesel::pg::Pg))]
pub struct WebhookEndpoint {
    pub id: i64,
    pub user_id: UserId,
    pub url: String,
    pub events: Vec<Option<String>>,
    /// `enabled`, or `disabled` (by a 410, after failing for days, or by
    /// its user).
    pub status: String,
    pub disabled_reason: Option<String>,
    pub secret: String,
    pub created_at: DateTime<Utc>,
}

impl WebhookEndpoint {
    /// The destination as the API shows it; its secret only when asked
    /// (the answer that registers it).
    pub fn json(&self, with_secret: bool) -> WebhookEndpointJson<'_> {
        WebhookEndpointJson {
            id: self.id,
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
pub struct NewWebhookEndpoint<'a> {
    pub user_id: UserId,
    pub idempotency_key_id: KeyId,
    pub url: &'a str,
    pub events: &'a [String],
    pub secret: &'a str,
}

/// Locks the user's destinations for the rest of the transaction (their
/// user's row), so that two registrations at once count each other.
pub fn lock_for_user(conn: &mut PgConnection, user_id: UserId) -> QueryResult<i64> {
    use crate::schema::users;
    users::table
        .find(user_id)
        .select(users::id)
        .for_update()
        .first::<i64>(conn)?;
    webhook_endpoints::table
        .filter(webhook_endpoints::user_id.eq(user_id))
        .count()
        .get_result(conn)
}

pub fn insert(
    conn: &mut PgConnection,
    endpoint: &NewWebhookEndpoint<'_>,
) -> QueryResult<WebhookEndpoint> {
    diesel::insert_into(webhook_endpoints::table)
        .values(endpoint)
        .returning(WebhookEndpoint::as_returning())
        .get_result(conn)
}

/// The user's destinations, oldest first (at most `MAX_PER_USER`).
pub fn list_for_user(
    conn: &mut PgConnection,
    user_id: UserId,
) -> QueryResult<Vec<WebhookEndpoint>> {
    webhook_endpoints::table
        .filter(webhook_endpoints::user_id.eq(user_id))
        .order(webhook_endpoints::id.asc())
        .select(WebhookEndpoint::as_select())
        .load(conn)
}

/// One of the user's destinations; another user's is not found.
pub fn find_for_user(
    conn: &mut PgConnection,
    user_id: UserId,
    id: i64,
) -> QueryResult<Option<WebhookEndpoint>> {
    webhook_endpoints::table
        .filter(webhook_endpoints::id.eq(id))
        .filter(webhook_endpoints::user_id.eq(user_id))
        .select(WebhookEndpoint::as_select())
        .first(conn)
        .optional()
}

/// Deletes one of the user's destinations, and with it its deliveries:
/// whether there was one.
pub fn delete_for_user(conn: &mut PgConnection, user_id: UserId, id: i64) -> QueryResult<bool> {
    let deleted = diesel::delete(
        webhook_endpoints::table
            .filter(webhook_endpoints::id.eq(id))
            .filter(webhook_endpoints::user_id.eq(user_id)),
    )
    .execute(conn)?;
    Ok(deleted > 0)
}
