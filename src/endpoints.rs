//! The idempotent endpoints, listed once: `for_each_endpoint!` hands
//! every endpoint's type to a macro of the caller's. This module makes of
//! it what everything but HTTP needs (the names their keys record, their
//! recovery points and calls for the database's list and the crash points,
//! their keys for the completer); `http::routes` makes each one's routes
//! and OpenAPI part of it, so the workers never import `http`. Adding an
//! endpoint adds one line here.

use std::sync::Arc;

use crate::context::ServiceContext;
use crate::crash;
use crate::idempotency::completer::Resumable;
use crate::idempotency::{Endpoint, KeyRows, RecoveryPoints, Step};

/// Calls `$then!` with every idempotent endpoint's type, in the order the
/// OpenAPI document lists them.
#[macro_export]
macro_rules! for_each_endpoint {
    ($then:ident) => {
        $then! {
            $crate::rides::create::RideEndpoint,
            $crate::refunds::create::RefundEndpoint,
            $crate::rides::complete::CompleteEndpoint,
            $crate::rides::cancel::CancelEndpoint,
            $crate::rides::tip::TipEndpoint,
            $crate::rides::assign::AssignEndpoint,
            $crate::drivers::create::DriverEndpoint,
            $crate::drivers::onboarding_link::OnboardingLinkEndpoint,
            $crate::user_webhooks::register::RegisterDestination,
            $crate::user_webhooks::actions::retry::RetryEndpoint,
            $crate::user_webhooks::actions::roll_secret::RollSecretEndpoint,
            $crate::user_webhooks::actions::test_event::TestEventEndpoint,
        }
    };
}

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
    fn of<E: Endpoint<Context = ServiceContext>>() -> Registered {
        let points = E::Point::ALL;
        Registered {
            name: E::Point::ENDPOINT,
            recovery_points: points.iter().map(|point| point.as_str()).collect(),
            calls: points
                .iter()
                .filter_map(|point| match point.step() {
                    Step::Call(call) => Some(call),
                    Step::Atomic => None,
                })
                .collect(),
            resumable: |context| Box::new(KeyRows::<E>::new(context)),
        }
    }
}

/// Every idempotent endpoint.
pub fn all() -> Vec<Registered> {
    macro_rules! registered {
        ($($endpoint:ty),* $(,)?) => { vec![$(Registered::of::<$endpoint>()),*] };
    }
    crate::for_each_endpoint!(registered)
}

/// Every endpoint's keys, for the completer and reconciliation.
pub fn resumable(context: &Arc<ServiceContext>) -> Vec<Box<dyn Resumable>> {
    all()
        .iter()
        .map(|endpoint| (endpoint.resumable)(context.clone()))
        .collect()
}

/// Every point where `RIDEPAY_CRASH_AT` can stop the server: the shared ones
/// (the transfer worker's among them), and `after-<point>` and
/// `after-<call>` of each endpoint.
pub fn crash_points() -> Vec<String> {
    let mut points = vec![
        crash::AFTER_CLAIM.to_owned(),
        crash::GATEWAY_IN_FLIGHT.to_owned(),
        crash::AFTER_FINISHED.to_owned(),
    ];
    points.extend(crash::TRANSFER_WORKER.map(str::to_owned));
    for endpoint in all() {
        let own = endpoint.recovery_points[1..endpoint.recovery_points.len() - 1].iter();
        points.extend(
            own.chain(&endpoint.calls)
                .map(|name| crash::after_name(name)),
        );
    }
    points
}
