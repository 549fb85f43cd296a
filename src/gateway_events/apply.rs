//! Applying what the gateway says about a payment to the ride it pays for.
//! What is applied is the PaymentIntent (or the payment's refunds) as the
//! gateway holds it now, never the event's payload, and every change goes
//! only forward (`rides::transitions`, `RefundStatus::may_become`), so an event
//! delivered late, twice or out of order cannot take a ride back.

use diesel::prelude::*;
use serde_json::json;

use super::event::{self, Disposition, Event, Subject};
use crate::audit;
use crate::context::ServiceContext;
use crate::idempotency;
use crate::ids::RideId;
use crate::payments::{
    Final, GatewayError, Payment, PaymentIntent, Refund as GatewayRefund, RIDEPAY_KEY,
};
use crate::public_ids::{PublicId, RefundPublicId};
use crate::refunds::create::REASONS;
use crate::refunds::model::{self as refunds, NewRefund, RefundStatus};
use crate::rides::charges::ChargeRecord;
use crate::rides::create::{self as create_ride, RecoveryPoint as RidePoint};
use crate::rides::model::{self as rides, Ride, RideStatus};
use crate::rides::transitions::{may_follow, settlement};
use crate::schema::idempotency_keys::dsl as keys;
use crate::schema::rides as rides_table;
use crate::service_error::ServiceError;

/// Why an event could not be applied now; the sender should redeliver it.
#[derive(Debug, thiserror::Error)]
pub enum NotYet {
    /// The ride's key is held by a live request, which will learn the
    /// payment's outcome itself or release the key.
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

/// What the gateway holds of an event's subject now.
enum Fetched {
    Intent(Box<PaymentIntent>),
    Refunds(Payment, Vec<GatewayRefund>),
}

/// Records the event once and applies it. No connection is held while the
/// gateway is asked.
pub fn process(context: &ServiceContext, event: &Event) -> Result<Disposition, NotYet> {
    {
        let mut conn = context.pool.get().map_err(ServiceError::from)?;
        if event::is_recorded(&mut conn, &event.id)? {
            return Ok(Disposition::Duplicate);
        }
    }
    let fetched = match fetch(context, event.subject.as_ref()) {
        Ok(fetched) => fetched,
        Err(failure) => return Err(NotYet::Service(crate::payments::unavailable(failure))),
    };
    let mut conn = context.pool.get().map_err(ServiceError::from)?;
    let Some(fetched) = fetched else {
        return Ok(record_only(&mut conn, event, Disposition::Ignored)?);
    };
    conn.transaction(|conn| {
        if !event::record(conn, event, Disposition::Applied)? {
            return Ok(Disposition::Duplicate);
        }
        let applied = match &fetched {
            Fetched::Intent(intent) => match ride_of_intent(conn, intent)? {
                Some(ride) => apply_intent(conn, context, &ride, intent).map(|()| true),
                None => Ok(false),
            },
            Fetched::Refunds(payment, made) => match ride_of_payment(conn, payment)? {
                Some(ride) => follow_refunds(conn, ride.id, payment, made).map(|()| true),
                None => Ok(false),
            },
        }?;
        if !applied {
            event::set_disposition(conn, &event.id, Disposition::Ignored)?;
            return Ok(Disposition::Ignored);
        }
        Ok(Disposition::Applied)
    })
}

/// The subject as the gateway holds it; `None` for an event ridepay does
/// not act on or a subject the gateway does not know.
fn fetch(
    context: &ServiceContext,
    subject: Option<&Subject>,
) -> Result<Option<Fetched>, GatewayError> {
    let gateway = context.gateway.as_ref();
    Ok(match subject {
        None => None,
        Some(Subject::Intent(id) | Subject::Dispute(Payment::Intent(id))) => gateway
            .retrieve_intent(id)?
            .map(|intent| Fetched::Intent(Box::new(intent))),
        Some(Subject::Refunds(payment)) => Some(Fetched::Refunds(
            payment.clone(),
            gateway.refunds_of(payment)?,
        )),
        // The charges of rides paid through the Charges API cannot be fetched
        // through the PaymentIntents API: an operator looks at the dispute.
        Some(Subject::Dispute(Payment::Charge(id))) => {
            log::warn!("charge {id} (paid through the Charges API) is disputed; see the dashboard");
            None
        }
        // A connected account's events come to their own endpoint
        // (`connect::process`).
        Some(Subject::Account(_)) => None,
    })
}

pub(super) fn record_only(
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

/// The ride a PaymentIntent pays for: the one that recorded it, or one that
/// has not heard back yet, found by the key's `ridepay_key`, which ridepay
/// sends as metadata with every intent.
fn ride_of_intent(conn: &mut PgConnection, intent: &PaymentIntent) -> QueryResult<Option<Ride>> {
    if let Some(ride) = ride_of_payment(conn, &Payment::Intent(intent.id.clone()))? {
        return Ok(Some(ride));
    }
    let Some(ridepay_key) = intent.metadata.get(RIDEPAY_KEY) else {
        return Ok(None);
    };
    rides_table::table
        .inner_join(
            keys::idempotency_keys.on(keys::id.nullable().eq(rides_table::idempotency_key_id)),
        )
        .filter(keys::ridepay_key.eq(ridepay_key))
        .filter(rides_table::payment_intent_id.is_null())
        .select(Ride::as_select())
        .first(conn)
        .optional()
}

/// The ride a payment pays for: its fare, or its tip.
fn ride_of_payment(conn: &mut PgConnection, payment: &Payment) -> QueryResult<Option<Ride>> {
    let query = rides_table::table.select(Ride::as_select());
    match payment {
        Payment::Intent(id) => query
            .filter(
                rides_table::payment_intent_id
                    .eq(id)
                    .or(rides_table::tip_payment_intent_id.eq(id)),
            )
            .first(conn)
            .optional(),
        Payment::Charge(id) => query
            .filter(rides_table::charge_id.eq(id))
            .first(conn)
            .optional(),
    }
}

/// What the PaymentIntent, as the gateway holds it, makes of its ride: the
/// one forward-only transition, whoever learnt of it (an event, the return
/// page).
pub fn apply_intent(
    conn: &mut PgConnection,
    context: &ServiceContext,
    ride: &Ride,
    intent: &PaymentIntent,
) -> Result<(), NotYet> {
    if ride.tip_payment_intent_id.as_ref() == Some(&intent.id) {
        // The tip's payment changes the ride only when it is disputed.
        if intent.disputed {
            dispute(conn, ride.id)?;
        }
        return Ok(());
    }
    if ride.status == RideStatus::Pending {
        // A decline is replayed to the key's own retry under the same
        // derived key; only a payment the gateway made is settled here.
        if settlement(RideStatus::Pending, intent)
            .is_some_and(|settled| settled.status != RideStatus::PaymentDeclined)
        {
            settle_pending(conn, context, ride, intent)?;
        }
    } else if let Some(settled) = settlement(ride.status, intent) {
        // A ride being completed or cancelled is left to the key doing it,
        // which records what it did (a cancellation fee's capture must not
        // make the ride `captured`): `settle` passes it by.
        if let Some(moved) = rides::settle(conn, ride.id, may_follow(settled.status), &settled)? {
            log::info!("ride {} is {}", moved.id, moved.status);
            audit::record(
                conn,
                moved.user_id,
                &format!("ride.{}", moved.status),
                "ride",
                moved.id.0,
                json!({ "payment_intent_id": intent.id }),
            )?;
        }
    }
    if intent.disputed {
        dispute(conn, ride.id)?;
    }
    Ok(())
}

/// A pending ride whose payment the gateway made: its key's outcome was
/// unknown (a timeout, a crash). The payment is recorded through the rides
/// endpoint's own step, under a fresh lease on the key (so fencing holds
/// off any earlier holder), and the lease released at ChargeCompleted: the
/// completer, or the client's retry, then finishes the key without calling
/// the gateway again.
fn settle_pending(
    conn: &mut PgConnection,
    context: &ServiceContext,
    ride: &Ride,
    intent: &PaymentIntent,
) -> Result<(), NotYet> {
    let key_id = ride.idempotency_key_id.ok_or_else(|| {
        ServiceError::Internal(anyhow::anyhow!(
            "pending ride {} has lost its idempotency key",
            ride.public_id
        ))
    })?;
    let mut lease = idempotency::take_over::<RidePoint>(conn, key_id, &context.key_policy)?
        .ok_or(NotYet::KeyInFlight)?;
    if lease.recovery_point() != RidePoint::RideCreated {
        return Err(NotYet::KeyInFlight);
    }
    if let Final::Refused(_) = create_ride::record_payment(conn, ride, intent)? {
        return Ok(());
    }
    lease.advance(conn, RidePoint::ChargeCompleted)?;
    lease.release(conn)?;
    log::info!(
        "webhook settled ride {} with PaymentIntent {} (key {key_id})",
        ride.public_id,
        intent.id
    );
    Ok(())
}

fn dispute(conn: &mut PgConnection, ride_id: RideId) -> QueryResult<()> {
    let ride = refunds::lock_ride(conn, ride_id)?;
    let disputed = rides::Settlement {
        status: RideStatus::Disputed,
        payment_intent_id: ride.payment_intent_id.clone(),
        client_secret: ride.client_secret.clone(),
        next_action: None,
        amount_authorized_cents: ride.amount_authorized_cents,
        amount_captured_cents: ride.amount_captured_cents,
        settling_key_id: ride.settling_key_id,
        amount_capturable_max_cents: None,
        hold_expires_at: None,
        tip_cents: ride.tip_cents,
        charge: ChargeRecord::default(),
    };
    if rides::settle(conn, ride_id, may_follow(RideStatus::Disputed), &disputed)?.is_some() {
        log::warn!("ride {ride_id} is disputed");
    }
    Ok(())
}

/// The payment's refunds as the gateway holds them, applied under the
/// ride's row lock: ridepay's own refunds follow their gateway status (once
/// the endpoint recorded them: until then, the endpoint does), and refunds
/// made outside ridepay (the dashboard, say) are recorded, without a key.
fn follow_refunds(
    conn: &mut PgConnection,
    ride_id: RideId,
    payment: &Payment,
    made: &[GatewayRefund],
) -> Result<(), NotYet> {
    let ride = refunds::lock_ride(conn, ride_id)?;
    for refund in made {
        match refunds::find_by_gateway_id(conn, &refund.id)? {
            Some(recorded) => refunds::follow(conn, &recorded, refund.status, &refund.id)?,
            // Ridepay's own, which its endpoint records.
            None if refund.metadata.contains_key(RIDEPAY_KEY) => {}
            None => record_outside_refund(conn, &ride, payment, refund)?,
        }
    }
    Ok(())
}

fn record_outside_refund(
    conn: &mut PgConnection,
    ride: &Ride,
    payment: &Payment,
    refund: &GatewayRefund,
) -> Result<(), NotYet> {
    let reason = refund
        .reason
        .as_deref()
        .filter(|reason| REASONS.contains(reason));
    let status = RefundStatus::of(refund.status);
    let recorded = refunds::insert(
        conn,
        &NewRefund {
            // Made by no request of ours: a random id.
            public_id: RefundPublicId::random(),
            ride_id: ride.id,
            user_id: ride.user_id,
            idempotency_key_id: None,
            amount_cents: refund.amount_cents,
            currency: &ride.currency,
            reason,
            status,
            gateway_refund_id: Some(&refund.id),
            part_of: None,
            payment_intent_id: match payment {
                Payment::Intent(id) => Some(id),
                Payment::Charge(_) => None,
            },
        },
    )?
    .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("a random refund id was taken")))?;
    if recorded.status == RefundStatus::Succeeded {
        refunds::add_refunded(conn, ride.id, refund.amount_cents)?;
    }
    log::info!(
        "recorded refund {} ({status}) of ride {} made outside ridepay",
        refund.id,
        ride.public_id
    );
    Ok(())
}
