//! The gateway's callback after the rider authenticated (`GET
//! /payments/return`): the query says only that the rider came back, so
//! nothing in it is trusted but the names. The ride is found by its
//! PaymentIntent and the secret checked; the gateway is asked for the
//! PaymentIntent before anything changes, and the ride takes the state the
//! gateway holds by the same forward-only transition the events apply, so a
//! reload, an event and a second callback at once leave one transition.

use diesel::prelude::*;

use super::apply::{self, NotYet};
use crate::context::ServiceContext;
use crate::rides::model::Ride;
use crate::schema::rides;
use crate::service_error::ServiceError;

/// What the query names: the PaymentIntent, and the secret that proves the
/// browser was sent by it.
pub struct Callback<'a> {
    pub payment_intent: &'a str,
    pub client_secret: &'a str,
}

/// The ride after the callback; `None` for an unknown PaymentIntent or a
/// secret that does not match (the page reveals nothing).
pub fn returned(
    context: &ServiceContext,
    callback: &Callback<'_>,
) -> Result<Option<Ride>, ServiceError> {
    let Some(ride) = find(&mut *context.pool.get()?, callback)? else {
        return Ok(None);
    };
    // Verify before crediting; no connection is held while the gateway works.
    let intent = context
        .gateway
        .retrieve_intent(callback.payment_intent)
        .map_err(crate::payments::unavailable)?;
    let Some(intent) = intent else {
        return Ok(None);
    };
    let mut conn = context.pool.get()?;
    match conn.transaction(|conn| apply::apply_intent(conn, context, &ride, &intent)) {
        // The ride's own request is still in flight: it records the answer.
        Ok(()) | Err(NotYet::KeyInFlight) => {}
        Err(NotYet::Service(err)) => return Err(err),
    }
    Ok(Some(
        rides::table
            .find(ride.id)
            .select(Ride::as_select())
            .first(&mut conn)?,
    ))
}

fn find(conn: &mut PgConnection, callback: &Callback<'_>) -> QueryResult<Option<Ride>> {
    let ride: Option<Ride> = rides::table
        .filter(rides::payment_intent_id.eq(callback.payment_intent))
        .select(Ride::as_select())
        .first(conn)
        .optional()?;
    Ok(ride.filter(|ride| {
        ride.client_secret
            .as_deref()
            .is_some_and(|secret| same_secret(secret, callback.client_secret))
    }))
}

/// Compares in time that does not depend on where the texts differ.
fn same_secret(stored: &str, given: &str) -> bool {
    stored.len() == given.len()
        && stored
            .bytes()
            .zip(given.bytes())
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::same_secret;

    #[test]
    fn secrets_match_only_whole() {
        assert!(same_secret("pi_1_secret_abc", "pi_1_secret_abc"));
        assert!(!same_secret("pi_1_secret_abc", "pi_1_secret_abd"));
        assert!(!same_secret("pi_1_secret_abc", "pi_1_secret_ab"));
        assert!(!same_secret("pi_1_secret_abc", ""));
    }
}
