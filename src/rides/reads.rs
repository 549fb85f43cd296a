//! The rides as reads find them: one by its id, one of a user's, one with
//! the caller's authentication, and the rides a caller sees, page by page;
//! and a ride as the platform reads it.

use diesel::prelude::*;

use super::model::Ride;
use crate::db::CacheStatement;
use crate::ids::{RideId, UserId};
use crate::pages::{from_cursor, Cursor};
use crate::public_ids::{named, PathId, RidePublicId};
use crate::schema::rides;
use crate::service_error::ServiceError;
use crate::users::{Role, User};
use crate::wire::driver::{RideDriverJson, RideDriverView};
use crate::wire::ride::RideJson;

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

/// The role of the caller whose API key hashes to `api_key_hash` and the
/// ride `id`, in one statement (a GET's authentication and read): `None`
/// for no such caller, a ride of `None` for one they may not see. A rider
/// sees their own rides; the platform every ride by its public id (an
/// integer of before resolves for the ride's own user only).
pub fn find_for_api_key(
    conn: &mut PgConnection,
    api_key_hash: &[u8],
    id: PathId<RidePublicId>,
) -> QueryResult<Option<(Role, Option<Ride>)>> {
    use crate::schema::users;
    let own = rides::user_id.eq(users::id);
    let seen = own.or(users::role.eq(Role::Platform));
    let public = rides::public_id.nullable().eq(id.public()).and(seen);
    let legacy = rides::legacy_id.eq(id.legacy()).and(own);
    users::table
        .left_join(rides::table.on(public.or(legacy)))
        .filter(users::api_key_hash.eq(api_key_hash))
        .select((users::role, Option::<Ride>::as_select()))
        .cached_as(find_for_api_key)
        .get_result(conn)
        .optional()
}

/// A page of the rides `user` sees (a rider their own, the platform every
/// user's), newest first, from `cursor`, and whether there are more beyond
/// it.
pub fn page_for(
    conn: &mut PgConnection,
    user: &User,
    limit: i64,
    cursor: Cursor<RidePublicId>,
) -> Result<(Vec<Ride>, bool), ServiceError> {
    let seen = || {
        let query = rides::table.into_boxed();
        match user.role {
            Role::Rider => query.filter(rides::user_id.eq(user.id)),
            Role::Platform => query,
        }
    };
    let cursor = cursor.resolve("ride", |id| {
        Ok(seen()
            .filter(rides::public_id.eq(id))
            .select(rides::id)
            .first::<RideId>(conn)
            .optional()?)
    })?;
    let query = seen().select(Ride::as_select()).limit(limit + 1);
    let query = from_cursor!(query, rides::id, cursor);
    Ok(cursor.page(query.load(conn)?, limit))
}

/// The ride as the platform reads it: with its driver's pay
/// (`drivers::pay`), which the ride's own row (the rider's view) does not
/// hold.
pub fn platform_view(ride: &Ride, pay: Option<RideDriverJson>) -> RideJson<'_> {
    RideJson {
        driver: pay.map(RideDriverView::Platform),
        ..ride.json()
    }
}
