//! Applying what the gateway says about a charge to the ride it paid for.
//! Every change is monotonic (pending -> charged, the refunded amount only
//! grows, charged/refunded -> disputed), and what is applied is the charge as
//! the gateway holds it now, so an event delivered late or twice can never
//! take a ride back to an older state.

use diesel::prelude::*;

use super::event::{self, Disposition, Event, CHARGE_EVENTS};
use crate::context::ServiceContext;
use crate::idempotency::flow;
use crate::ids::{KeyId, RideId};
use crate::payments::{ChargeState, GatewayError, Refund as GatewayRefund};
use crate::refunds::model::{self as refunds, NewRefund, RefundStatus};
use crate::refunds::request::REASONS;
use crate::rides::model::{self as rides, Ride, RideStatus};
use crate::rides::{phases as ride_phases, RecoveryPoint as RidePoint};
use crate::service_error::ServiceError;

/// Why an event could not be applied now; the sender should redeliver it.
#[derive(Debug, thiserror::Error)]
pub enum NotYet {
    /// The ride's key is held by a live request, which will learn the
    /// charge's outcome itself or release the key.
    #[error("the ride's idempotency key is in flight")]
    KeyInFlight,
    #[error(transparent)]
    Service(#[from] ServiceError),
}

impl From<diesel::result::Error> for NotYet {
    fn from(err: diesel::result::Error) -> Self {
        NotYet::Service(err.into())
    }
}

/// Records the event once and applies it. No connection is held while the
/// gateway is asked about the charge.
pub fn process(context: &ServiceContext, event: &Event) -> Result<Disposition, NotYet> {
    {
        let mut conn = context.pool.get().map_err(ServiceError::from)?;
        if event::is_recorded(&mut conn, &event.id)? {
            return Ok(Disposition::Duplicate);
        }
        let settled = match &event.charge_id {
            None => Some(Disposition::Ignored),
            Some(_) if !CHARGE_EVENTS.contains(&event.event_type.as_str()) => {
                Some(Disposition::Ignored)
            }
            Some(_) if event::newer_applied(&mut conn, event)? => Some(Disposition::Superseded),
            Some(_) => None,
        };
        if let Some(disposition) = settled {
            return Ok(record_only(&mut conn, event, disposition)?);
        }
    }
    let charge_id = event.charge_id.as_deref().unwrap_or_default();
    let charge = context
        .gateway
        .retrieve_charge(charge_id)
        .map_err(GatewayError::into_unavailable)?;
    let mut conn = context.pool.get().map_err(ServiceError::from)?;
    let Some(charge) = charge else {
        return Ok(record_only(&mut conn, event, Disposition::Ignored)?);
    };
    conn.transaction(|conn| {
        if !event::record(conn, event, Disposition::Applied)? {
            return Ok(Disposition::Duplicate);
        }
        let Some(ride) = ride_of(conn, &charge)? else {
            event::set_disposition(conn, &event.id, Disposition::Ignored)?;
            return Ok(Disposition::Ignored);
        };
        apply(conn, context, &ride, &charge)?;
        Ok(Disposition::Applied)
    })
}

fn record_only(
    conn: &mut PgConnection,
    event: &Event,
    disposition: Disposition,
) -> QueryResult<Disposition> {
    Ok(if event::record(conn, event, disposition)? {
        disposition
    } else {
        Disposition::Duplicate
    })
}

/// The ride a charge paid for: named by the metadata ridepay sends with
/// every charge (checked against the ride: its charge, or for a ride not yet
/// charged, its key), or else found by its charge id.
fn ride_of(conn: &mut PgConnection, charge: &ChargeState) -> QueryResult<Option<Ride>> {
    let named = |name: &str| {
        charge
            .metadata
            .get(name)
            .and_then(|value| value.parse::<i64>().ok())
    };
    if let Some(ride_id) = named("ride_id") {
        if let Some(ride) = rides::find_ride(conn, RideId(ride_id)).optional()? {
            let same_charge = ride.charge_id.as_deref() == Some(charge.id.as_str());
            let its_key = ride.charge_id.is_none()
                && ride.idempotency_key_id.is_some()
                && ride.idempotency_key_id == named("idempotency_key_id").map(KeyId);
            if same_charge || its_key {
                return Ok(Some(ride));
            }
        }
    }
    crate::schema::rides::table
        .filter(crate::schema::rides::charge_id.eq(&charge.id))
        .select(Ride::as_select())
        .first(conn)
        .optional()
}

fn apply(
    conn: &mut PgConnection,
    context: &ServiceContext,
    ride: &Ride,
    charge: &ChargeState,
) -> Result<(), NotYet> {
    if ride.status == RideStatus::Pending {
        if !charge.succeeded {
            // A decline is replayed to the key's own retry under the same
            // derived key; nothing to settle here.
            return Ok(());
        }
        settle_charge(conn, context, ride, charge)?;
    }
    // Key row (above) before ride row, the order every path takes.
    let ride = refunds::lock_ride(conn, ride.id)?;
    record_outside_refunds(conn, &ride, &charge.refunds)?;
    if charge.disputed
        && [RideStatus::Charged.as_str(), RideStatus::Refunded.as_str()]
            .contains(&ride.status.as_str())
    {
        diesel::update(crate::schema::rides::table.find(ride.id))
            .set((
                crate::schema::rides::status.eq(RideStatus::Disputed.as_str()),
                crate::schema::rides::updated_at.eq(diesel::dsl::now),
            ))
            .execute(conn)?;
        log::warn!("ride {} is disputed (charge {})", ride.id, charge.id);
    }
    Ok(())
}

/// A pending ride whose charge the gateway holds: its key's outcome was
/// unknown (a timeout, a crash). The charge is recorded through the rides
/// endpoint's own phase, under a fresh lease on the key (so fencing holds
/// off any earlier holder), and the lease released at ChargeCompleted: the
/// completer, or the client's retry, then finishes the key without calling
/// the gateway again.
fn settle_charge(
    conn: &mut PgConnection,
    context: &ServiceContext,
    ride: &Ride,
    charge: &ChargeState,
) -> Result<(), NotYet> {
    let key_id = ride.idempotency_key_id.ok_or_else(|| {
        ServiceError::Internal(anyhow::anyhow!(
            "pending ride {} has lost its idempotency key",
            ride.id
        ))
    })?;
    let mut lease = flow::take_over::<RidePoint>(conn, key_id, &context.key_policy)?
        .ok_or(NotYet::KeyInFlight)?;
    if lease.recovery_point() != RidePoint::RideCreated {
        return Err(NotYet::KeyInFlight);
    }
    ride_phases::record_charge(conn, ride, &charge.charge())?;
    lease.advance(conn, RidePoint::ChargeCompleted)?;
    lease.release(conn)?;
    log::info!(
        "webhook settled ride {} with charge {} (key {key_id})",
        ride.id,
        charge.id
    );
    Ok(())
}

/// Refunds made outside ridepay (the dashboard, say): recorded as refunds
/// without a key, and added to the ride. ridepay's own refunds (named by
/// their metadata) are left to their endpoint, which records them itself.
fn record_outside_refunds(
    conn: &mut PgConnection,
    ride: &Ride,
    made: &[GatewayRefund],
) -> Result<(), ServiceError> {
    if ride.charge_id.is_none() {
        return Ok(());
    }
    for refund in made {
        if refund.metadata.contains_key("refund_id")
            || refunds::find_by_gateway_id(conn, &refund.id)?.is_some()
        {
            continue;
        }
        let reason = refund
            .reason
            .as_deref()
            .filter(|reason| REASONS.contains(reason));
        refunds::insert(
            conn,
            &NewRefund {
                ride_id: ride.id,
                user_id: ride.user_id,
                idempotency_key_id: None,
                amount_cents: refund.amount_cents,
                currency: &ride.currency,
                reason,
                status: RefundStatus::Succeeded,
                gateway_refund_id: Some(&refund.id),
            },
        )?;
        refunds::add_refunded(conn, ride.id, refund.amount_cents)?;
        log::info!(
            "recorded refund {} of ride {} made outside ridepay",
            refund.id,
            ride.id
        );
    }
    Ok(())
}
