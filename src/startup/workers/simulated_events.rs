//! The simulated gateway's events, delivered to ridepay's own event
//! handling in-process, as Stripe's reach `/webhooks/stripe`: the same
//! `reconcile::process`, which fetches the subject from the gateway before
//! changing anything. An event not taken (a key in flight, the database
//! down) is sent again.

use std::sync::Arc;
use std::time::Duration;

use super::Workers;
use crate::config::{GatewayKind, Settings};
use crate::context::ServiceContext;
use crate::gateway_events::apply::{self, NotYet};
use crate::gateway_events::connect;
use crate::gateway_events::event::{Event, Subject};
use crate::payments::Payment;
use ridepay_doubles::events::{self, Double, ObjectKind, SimulatedEvent};
use ridepay_doubles::refunds;

/// How often the simulated gateway's clock ticks and its events go out: a
/// browser waiting on the return page should not notice.
const INTERVAL: Duration = Duration::from_millis(200);
const BATCH: i64 = 100;
/// How long an event that was not taken waits to be sent again.
const RESEND_AFTER: Duration = Duration::from_secs(1);

/// The worker, where the simulated gateway is the one in use and its events
/// are on.
pub(super) fn start(workers: &mut Workers, settings: &Settings, context: Arc<ServiceContext>) {
    if settings.gateway.kind == GatewayKind::Simulated && settings.gateway.simulated.events_enabled
    {
        workers.spawn("simulated-events", INTERVAL, move || {
            match run_once(&context) {
                Ok(0) => {}
                Ok(sent) => log::debug!("simulated gateway sent {sent} events"),
                Err(err) => log::warn!("simulated gateway events: {err:#}"),
            }
        });
    }
}

/// One tick of the gateway's clock and one batch of its events; returns
/// how many were taken.
pub fn run_once(context: &ServiceContext) -> anyhow::Result<usize> {
    let taken = {
        let mut conn = context.pool.get()?;
        refunds::sweep(&mut conn, BATCH)?;
        events::take(&mut conn, Double::Simulated, BATCH, RESEND_AFTER)?
    };
    let mut sent = 0;
    for simulated in &taken {
        let event = event_of(context, simulated)?;
        let processed = match simulated.object_kind {
            ObjectKind::Account => connect::process(context, &event).map_err(NotYet::Service),
            _ => apply::process(context, &event),
        };
        match processed {
            Ok(_) => {
                events::mark_sent(&mut *context.pool.get()?, &simulated.id)?;
                sent += 1;
            }
            Err(NotYet::KeyInFlight) => {}
            Err(NotYet::Service(err)) => {
                log::warn!("simulated event {} not applied yet: {err}", simulated.id)
            }
        }
    }
    Ok(sent)
}

/// The event as the webhook route would have parsed it.
fn event_of(context: &ServiceContext, simulated: &SimulatedEvent) -> anyhow::Result<Event> {
    let intent = || Payment::Intent(simulated.object_id.clone());
    let subject = match simulated.object_kind {
        ObjectKind::PaymentIntent => Some(Subject::Intent(simulated.object_id.clone())),
        ObjectKind::Dispute => Some(Subject::Dispute(intent())),
        ObjectKind::Account => Some(Subject::Account(simulated.object_id.clone())),
        ObjectKind::Refund => refunds::find(&mut *context.pool.get()?, &simulated.object_id)?
            .and_then(|refund| match (refund.payment_intent, refund.charge) {
                (Some(intent), _) => Some(Payment::Intent(intent)),
                (None, charge) => charge.map(Payment::Charge),
            })
            .map(Subject::Refunds),
    };
    Ok(Event {
        id: simulated.id.clone(),
        event_type: simulated.event_type.clone(),
        created: simulated.created_at,
        subject,
        livemode: false,
    })
}
