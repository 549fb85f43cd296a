//! The fake's events, sent as Stripe sends them: a JSON event with the
//! object as it is now, `Stripe-Signature` over it, sent again until the
//! receiver takes it (at least once, in order per sender). Payment events go
//! to `--webhook-url`, connected accounts' to `--connect-webhook-url`, as
//! Stripe keeps a platform's endpoints apart from its Connect endpoints.
//! The same thread runs the doubles' clock, so holds lapse and refunds
//! settle with their events while the fake runs.

use std::thread;
use std::time::Duration;

use diesel::PgConnection;
use serde_json::Value;

use super::config::WebhookTarget;
use super::state::State;
use super::wire;
use crate::events::{self, Double, ObjectKind, SimulatedEvent};
use crate::{accounts, intents, refunds};
use ridepay_gateway::stripe_signature;
use ridepay_gateway::{Payment, Refund};

const TICK: Duration = Duration::from_millis(200);
/// How long an event taken for sending waits before it is sent again.
const RESEND_AFTER: Duration = Duration::from_millis(500);
const BATCH: i64 = 50;

/// Runs the clock and sends events for the rest of the process.
pub fn start(state: std::sync::Weak<State>) -> std::io::Result<()> {
    thread::Builder::new()
        .name("fake-gateway-events".to_owned())
        .spawn(move || {
            // Nothing is followed but what it was given: no redirects.
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .timeout_connect(Some(Duration::from_secs(5)))
                .timeout_global(Some(Duration::from_secs(10)))
                .max_redirects(0)
                .http_status_as_error(false)
                .build()
                .into();
            while let Some(state) = state.upgrade() {
                if let Err(err) = tick(&state, &agent) {
                    log::debug!("fake gateway events: {err}");
                }
                drop(state);
                thread::sleep(TICK);
            }
        })
        .map(|_| ())
}

fn tick(state: &State, agent: &ureq::Agent) -> anyhow::Result<()> {
    let mut conn = state.pool.get()?;
    refunds::sweep(&mut conn, BATCH)?;
    let taken = events::take(&mut conn, Double::Fake, BATCH, RESEND_AFTER)?;
    let payments = state.webhook_target();
    for event in taken {
        let target = match event.object_kind {
            ObjectKind::Account => &state.config.connect_webhook,
            _ => &payments,
        };
        let delivered = match target {
            // Nobody listens: the event is dropped, as Stripe drops events
            // for an account without endpoints.
            None => true,
            Some(target) => match render(&mut conn, state, &event)? {
                Some(body) => deliver(agent, target, &body),
                None => true,
            },
        };
        if !delivered {
            // Later events wait, so each object's events arrive in order.
            break;
        }
        events::mark_sent(&mut conn, &event.id)?;
    }
    Ok(())
}

/// The event's JSON, with its object as the fake holds it now.
fn render(
    conn: &mut PgConnection,
    state: &State,
    event: &SimulatedEvent,
) -> anyhow::Result<Option<Vec<u8>>> {
    let object: Option<Value> = match event.object_kind {
        ObjectKind::PaymentIntent => intents::retrieve(conn, &event.object_id, &state.intents)?
            .map(|intent| serde_json::to_value(wire::intent_object(&intent, None))),
        ObjectKind::Dispute => intents::retrieve(conn, &event.object_id, &state.intents)?
            .map(|intent| Ok(wire::dispute_object(&intent))),
        // `charge.refunded` carries the charge, the others the refund.
        ObjectKind::Refund => match refunds::find(conn, &event.object_id)? {
            Some(refund) if event.event_type == "charge.refunded" => {
                refunded_charge(conn, state, &refund)?.map(Ok)
            }
            refund => refund.map(|refund| Ok(wire::refund_object(&refund))),
        },
        ObjectKind::Account => accounts::retrieve(conn, &event.object_id, Double::Fake)?
            .map(|account| Ok(wire::account_object(&account))),
    }
    .transpose()?;
    Ok(object.map(|object| {
        let mut sent = wire::event(
            &event.id,
            &event.event_type,
            event.created_at.timestamp(),
            object,
        );
        if event.object_kind == ObjectKind::Account {
            // A Connect event names the account it comes from.
            sent["account"] = Value::from(event.object_id.as_str());
        }
        serde_json::to_vec(&sent).expect("events serialise")
    }))
}

fn refunded_charge(
    conn: &mut PgConnection,
    state: &State,
    refund: &Refund,
) -> anyhow::Result<Option<Value>> {
    let Some(charge) = &refund.charge else {
        return Ok(None);
    };
    Ok(Some(match &refund.payment_intent {
        Some(id) => match intents::retrieve(conn, id, &state.intents)? {
            Some(intent) => {
                let refunds = refunds::refunds_of(conn, &Payment::Intent(id.clone()))?;
                let expanded = wire::ExpandedCharge {
                    refunded: wire::refunded(&refunds),
                    balance_transaction: false,
                };
                wire::charge_object(charge, &intent, expanded)
            }
            None => return Ok(None),
        },
        None => wire::legacy_charge_object(charge, refund),
    }))
}

fn deliver(agent: &ureq::Agent, target: &WebhookTarget, body: &[u8]) -> bool {
    // Each delivery is signed afresh, so a late one is not stale.
    let header = stripe_signature::sign(&target.secret, chrono::Utc::now().timestamp(), body);
    match agent
        .post(&target.url)
        .header("Content-Type", "application/json")
        .header("Stripe-Signature", &header)
        .send(body)
    {
        Ok(response) if response.status().is_success() => true,
        Ok(response) => {
            log::debug!("webhook answered {}", response.status());
            false
        }
        Err(err) => {
            log::debug!("webhook delivery failed: {err}");
            false
        }
    }
}
