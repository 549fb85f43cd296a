//! Taking a driver's share of a refund back from a transfer already made
//! (`POST /v1/transfers/{id}/reversals`), by the transfer worker. The
//! reversal is owed by the refund's own posting (the database records it in
//! that transaction); it is claimed and sent as transfers are
//! (`transfers`). Its gateway key is derived from the refund part it takes
//! back for, so every instance sends the same call. A reversal the gateway
//! refuses (`balance_insufficient`: the driver's money is not available
//! yet, or already paid out) is not tried again: its amount stays as the
//! driver's debt, which the next transfer to them nets.

use std::time::Duration;

use diesel::prelude::*;
use diesel::sql_types::{BigInt, SmallInt, Text};
use sha2::{Digest, Sha256};

use super::transfers::{ride_locked, Made};

use crate::context::ServiceContext;
use crate::payments::{
    CreateTransferReversal, GatewayError, ListTransferReversals, TransferReversal, GENERATION,
    INSTALLATION, RIDEPAY_KEY,
};
use crate::schema::transfer_reversals;
use crate::service_error::ServiceError;

/// A reversal claimed to be made.
#[derive(Debug, QueryableByName)]
struct Claimed {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = BigInt)]
    claim_epoch: i64,
    /// The transfer it takes back from: its row, and its `tr_` id.
    #[diesel(sql_type = BigInt)]
    transfer_id: i64,
    #[diesel(sql_type = Text)]
    transfer: String,
    #[diesel(sql_type = BigInt)]
    amount_cents: i64,
    #[diesel(sql_type = SmallInt)]
    generation: i16,
    /// The gateway's id of the refund part that owes it.
    #[diesel(sql_type = Text)]
    refund: String,
}

/// One pass: up to `batch` reversals owed claimed and made (`failed`:
/// refused, left as the driver's debt).
pub fn make_due(cx: &ServiceContext, batch: i64) -> Result<Made, ServiceError> {
    let claimed = claim(&mut *cx.pool.get()?, batch, cx.drivers.claim)?;
    Ok(Made::each("reversal", &claimed, |r| r.id, |r| make(cx, r)))
}

fn claim(conn: &mut PgConnection, batch: i64, claim: Duration) -> QueryResult<Vec<Claimed>> {
    diesel::sql_query(
        "UPDATE transfer_reversals AS rv
         SET claimed_until = now() + make_interval(secs => $2),
             claim_epoch = rv.claim_epoch + 1
         FROM transfers AS t, refunds AS r
         WHERE rv.id IN (
                 SELECT due.id FROM transfer_reversals AS due
                 WHERE due.status = 'pending'
                   AND (due.claimed_until IS NULL OR due.claimed_until < now())
                 ORDER BY due.id LIMIT $1
                 FOR UPDATE SKIP LOCKED)
           AND t.id = rv.transfer_id AND r.id = rv.refund_id
         RETURNING rv.id, rv.claim_epoch, rv.transfer_id, t.gateway_transfer_id AS transfer, rv.amount_cents,
                   rv.generation, r.gateway_refund_id AS refund",
    )
    .bind::<BigInt, _>(batch)
    .bind::<diesel::sql_types::Double, _>(claim.as_secs_f64())
    .load(conn)
}

/// The reversal made, and recorded: `Some(true)` reversed, `Some(false)`
/// refused, `None` left for a later pass.
fn make(cx: &ServiceContext, reversal: &Claimed) -> Result<Option<bool>, ServiceError> {
    let key = reversal_key(cx, reversal);
    let answer = cx
        .gateway
        .create_transfer_reversal(&CreateTransferReversal {
            idempotency_key: format!("ridepay-reversal-{key}-g{}", reversal.generation),
            transfer: reversal.transfer.clone(),
            amount_cents: reversal.amount_cents,
            metadata: vec![
                (INSTALLATION.to_owned(), cx.installation_id.to_string()),
                (RIDEPAY_KEY.to_owned(), key.clone()),
                (GENERATION.to_owned(), reversal.generation.to_string()),
            ],
        });
    crate::crash::after("reversal");
    let outcome = match answer {
        Ok(made) => Outcome::Reversed(made),
        Err(GatewayError::SavedFailure { .. }) => match look_up(cx, reversal, &key)? {
            Some(made) => Outcome::Reversed(made),
            // Proven not made: the next pass sends it under a new key.
            None => Outcome::Left { next_key: true },
        },
        Err(refusal @ (GatewayError::Rejected { .. } | GatewayError::Declined { .. })) => {
            Outcome::Refused(refusal.to_string())
        }
        Err(failure) => {
            log::warn!("transfer reversal {} not made yet: {failure}", reversal.id);
            Outcome::Left { next_key: false }
        }
    };
    record(cx, reversal, &outcome)?;
    Ok(match outcome {
        Outcome::Reversed(_) => Some(true),
        Outcome::Refused(_) => Some(false),
        Outcome::Left { .. } => None,
    })
}

enum Outcome {
    Reversed(TransferReversal),
    Refused(String),
    /// Owed still; under the next generation's key once the gateway proved
    /// nothing was made under this one.
    Left {
        next_key: bool,
    },
}

/// The reversal's own `ridepay_key`, derived from the refund part it takes
/// back for.
fn reversal_key(cx: &ServiceContext, reversal: &Claimed) -> String {
    let mut hash = Sha256::new();
    hash.update(cx.installation_id.as_bytes());
    hash.update(reversal.refund.as_bytes());
    hex::encode(hash.finalize())
}

/// Any generation's reversal made under `key`, in the gateway's list of the
/// transfer's reversals (a list never lags).
fn look_up(
    cx: &ServiceContext,
    reversal: &Claimed,
    key: &str,
) -> Result<Option<TransferReversal>, ServiceError> {
    let mut request = Some(ListTransferReversals::of(&reversal.transfer));
    while let Some(listing) = request {
        let page = cx
            .gateway
            .list_transfer_reversals(&listing)
            .map_err(crate::payments::unavailable)?;
        if let Some(made) = page
            .reversals
            .iter()
            .find(|made| made.metadata.get(RIDEPAY_KEY).map(String::as_str) == Some(key))
        {
            return Ok(Some(made.clone()));
        }
        request = listing.after(&page);
    }
    Ok(None)
}

/// What the gateway answered, under the claim (a worker that claimed the
/// reversal after fences this one out) and the ride's row lock. A reversal
/// made is posted, and the transfer's reversed amount grows, by the
/// database's trigger.
fn record(cx: &ServiceContext, reversal: &Claimed, outcome: &Outcome) -> Result<(), ServiceError> {
    use transfer_reversals::dsl as rv;
    let claimed = rv::transfer_reversals
        .filter(rv::id.eq(reversal.id))
        .filter(rv::claim_epoch.eq(reversal.claim_epoch))
        .filter(ride_locked(reversal.transfer_id));
    let released = rv::claimed_until.eq(None::<chrono::DateTime<chrono::Utc>>);
    let conn = &mut *cx.pool.get()?;
    match outcome {
        Outcome::Reversed(made) => diesel::update(claimed)
            .set((
                rv::status.eq("reversed"),
                rv::gateway_reversal_id.eq(&made.id),
                rv::amount_cents.eq(made.amount_cents),
                released,
                rv::updated_at.eq(diesel::dsl::now),
            ))
            .execute(conn),
        Outcome::Refused(reason) => diesel::update(claimed)
            .set((
                rv::status.eq("failed"),
                rv::failure_reason.eq(reason.chars().take(500).collect::<String>()),
                released,
                rv::updated_at.eq(diesel::dsl::now),
            ))
            .execute(conn),
        Outcome::Left { next_key } => diesel::update(claimed)
            .set((
                rv::generation.eq(rv::generation + i16::from(*next_key)),
                released,
            ))
            .execute(conn),
    }?;
    Ok(())
}
