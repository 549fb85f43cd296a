//! The idempotent endpoints, listed once for everything but HTTP: the
//! names their keys record, their recovery points and calls (for the
//! database's list and the crash points) and their keys for the completer.
//! `http::routes` lists their routes and
//! OpenAPI parts, in the same order. Adding an endpoint adds one line to
//! each.

use std::sync::Arc;

use crate::context::ServiceContext;
use crate::idempotency::completer::Resumable;
use crate::idempotency::endpoint::Keys;
use crate::idempotency::{RecoveryPoints, Step};
use crate::outbound_webhooks::actions::{self, Action};
use crate::{crash, outbound_webhooks, refunds, rides};

/// One endpoint, as the application wires it.
pub struct Registered {
    /// The name its keys record.
    pub name: &'static str,
    /// Its recovery points, in the order they are reached.
    pub recovery_points: Vec<&'static str>,
    /// Its calls to the outside world, by name.
    pub calls: Vec<&'static str>,
    /// Its keys, for the completer.
    pub resumable: fn(Arc<ServiceContext>) -> Box<dyn Resumable>,
}

impl Registered {
    fn of<P: RecoveryPoints>(
        resumable: fn(Arc<ServiceContext>) -> Box<dyn Resumable>,
    ) -> Registered {
        Registered {
            name: P::ENDPOINT,
            recovery_points: P::ALL.iter().map(|point| point.as_str()).collect(),
            calls: P::ALL
                .iter()
                .filter_map(|point| match point.step() {
                    Step::Call(call) => Some(call),
                    Step::Atomic => None,
                })
                .collect(),
            resumable,
        }
    }
}

/// Every idempotent endpoint.
pub fn all() -> Vec<Registered> {
    vec![
        Registered::of::<rides::create::RecoveryPoint>(|context| {
            Box::new(Keys::<rides::create::endpoint::RideEndpoint>::new(context))
        }),
        Registered::of::<refunds::RecoveryPoint>(|context| {
            Box::new(Keys::<refunds::endpoint::RefundEndpoint>::new(context))
        }),
        Registered::of::<rides::complete::RecoveryPoint>(|context| {
            Box::new(Keys::<rides::complete::endpoint::CompleteEndpoint>::new(
                context,
            ))
        }),
        Registered::of::<rides::cancel::RecoveryPoint>(|context| {
            Box::new(Keys::<rides::cancel::endpoint::CancelEndpoint>::new(
                context,
            ))
        }),
        Registered::of::<rides::tip::RecoveryPoint>(|context| {
            Box::new(Keys::<rides::tip::endpoint::TipEndpoint>::new(context))
        }),
        Registered::of::<outbound_webhooks::create::RecoveryPoint>(|context| {
            Box::new(Keys::<
                outbound_webhooks::create::endpoint::WebhookEndpointCreate,
            >::new(context))
        }),
        Registered::of::<actions::retry::RecoveryPoint>(|context| {
            Box::new(Keys::<Action<actions::retry::Retry>>::new(context))
        }),
        Registered::of::<actions::roll_secret::RecoveryPoint>(|context| {
            Box::new(Keys::<Action<actions::roll_secret::RollSecret>>::new(
                context,
            ))
        }),
        Registered::of::<actions::test_event::RecoveryPoint>(|context| {
            Box::new(Keys::<Action<actions::test_event::TestEvent>>::new(context))
        }),
    ]
}

/// Every endpoint's keys, for the completer and reconciliation.
pub fn resumable(context: &Arc<ServiceContext>) -> Vec<Box<dyn Resumable>> {
    all()
        .iter()
        .map(|endpoint| (endpoint.resumable)(context.clone()))
        .collect()
}

/// Every point where `RIDEPAY_CRASH_AT` can stop the server: the shared ones,
/// and `after-<point>` and `after-<call>` of each endpoint.
pub fn crash_points() -> Vec<String> {
    let mut points = vec![
        crash::AFTER_CLAIM.to_owned(),
        crash::GATEWAY_IN_FLIGHT.to_owned(),
        crash::AFTER_FINISHED.to_owned(),
    ];
    for endpoint in all() {
        let own = endpoint.recovery_points[1..endpoint.recovery_points.len() - 1].iter();
        points.extend(
            own.chain(&endpoint.calls)
                .map(|name| crash::after_name(name)),
        );
    }
    points
}
