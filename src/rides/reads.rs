//! The rides as reads find them: one by its id, one of a user's, one with
//! the caller's authentication, and a user's list, page by page.

use diesel::prelude::*;

use super::model::Ride;
use crate::db::CacheStatement;
use crate::ids::{RideId, UserId};
use crate::pages::{from_cursor, Cursor};
use crate::public_ids::{named, PathId, RidePublicId};
use crate::schema::rides;
use crate::service_error::ServiceError;

/// The ride `id`, whoever's.
pub fn find_ride(conn: &mut PgConnection, id: RideId) -> QueryResult<Ride> {
    rides::table.find(id).select(Ride::as_select()).first(conn)
}

/// One of the user's rides; another user's ride is simply not found.
pub fn find_for_user(
    conn: &mut PgConnection,
    user_id: UserId,
    id: PathId<RidePublicId>,
) -> QueryResult<Option<Ride>> {
    rides::table
        .filter(named!(rides, id))
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
    id: PathId<RidePublicId>,
) -> QueryResult<Option<Option<Ride>>> {
    use crate::schema::users;
    users::table
        .left_join(rides::table.on(rides::user_id.eq(users::id).and(named!(rides, id))))
        .filter(users::api_key_hash.eq(api_key_hash))
        .select(Option::<Ride>::as_select())
        .cached_as(find_for_api_key)
        .get_result(conn)
        .optional()
}

/// A page of the user's rides, newest first, from `cursor`, and whether
/// there are more beyond it.
pub fn page_for_user(
    conn: &mut PgConnection,
    user_id: UserId,
    limit: i64,
    cursor: Cursor<RidePublicId>,
) -> Result<(Vec<Ride>, bool), ServiceError> {
    let cursor = cursor.resolve("ride", |id| {
        Ok(rides::table
            .filter(rides::public_id.eq(id))
            .filter(rides::user_id.eq(user_id))
            .select(rides::id)
            .first::<RideId>(conn)
            .optional()?)
    })?;
    let query = rides::table
        .filter(rides::user_id.eq(user_id))
        .select(Ride::as_select())
        .limit(limit + 1)
        .into_boxed();
    let query = from_cursor!(query, rides::id, cursor);
    Ok(cursor.page(query.load(conn)?, limit))
}
