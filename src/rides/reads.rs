//! The rides as reads find them: one by its id, one of a user's, one with
//! the caller's authentication, and a user's list, page by page.

use diesel::prelude::*;

use super::model::Ride;
use crate::db::CacheStatement;
use crate::ids::{RideId, UserId};
use crate::schema::rides;

/// The ride `id`, whoever's.
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

/// The caller whose API key hashes to `api_key_hash` and their ride `id`, in
/// one statement (a GET's authentication and read): `None` for no such
/// caller, `Some(None)` for a ride that is not theirs.
pub fn find_for_api_key(
    conn: &mut PgConnection,
    api_key_hash: &[u8],
    id: RideId,
) -> QueryResult<Option<Option<Ride>>> {
    use crate::schema::users;
    users::table
        .left_join(rides::table.on(rides::user_id.eq(users::id).and(rides::id.eq(id))))
        .filter(users::api_key_hash.eq(api_key_hash))
        .select(Option::<Ride>::as_select())
        .cached_as(find_for_api_key)
        .get_result(conn)
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
