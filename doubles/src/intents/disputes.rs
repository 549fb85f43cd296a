//! A dispute of an intent's charge, as the card holder's bank opens one.

use diesel::prelude::*;

use super::errors::storage;
use super::errors::transaction;
use crate::events::{self, Double, ObjectKind};
use crate::schema::simulated_payment_intents;
use ridepay_gateway::GatewayError;

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
