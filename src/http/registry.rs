//! The idempotent endpoints, listed once. Each entry feeds the routes, the
//! completer, the outbox's job handlers, the OpenAPI document and the list
//! of crash points; adding an endpoint adds one line to [`endpoints`].

use std::sync::Arc;

use actix_web::web::ServiceConfig;

use crate::context::ServiceContext;
use crate::idempotency::completer::Resumable;
use crate::idempotency::endpoint::Keys;
use crate::idempotency::{RecoveryPoints, Step};
use crate::outbox::JobHandler;
use crate::{crash, refunds, rides};

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
    /// The jobs it stages in the outbox.
    pub jobs: fn() -> Vec<Box<dyn JobHandler>>,
    /// Its routes (under `/api`), the reads of its resource included.
    pub routes: fn(&mut ServiceConfig),
    /// Its part of the OpenAPI document.
    pub openapi: fn() -> utoipa::openapi::OpenApi,
}

impl Registered {
    fn of<P: RecoveryPoints>(
        resumable: fn(Arc<ServiceContext>) -> Box<dyn Resumable>,
        jobs: fn() -> Vec<Box<dyn JobHandler>>,
        routes: fn(&mut ServiceConfig),
        openapi: fn() -> utoipa::openapi::OpenApi,
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
            jobs,
            routes,
            openapi,
        }
    }
}

/// Every idempotent endpoint.
pub fn endpoints() -> Vec<Registered> {
    use utoipa::OpenApi;
    vec![
        Registered::of::<rides::RecoveryPoint>(
            |context| Box::new(Keys::<rides::service::RideEndpoint>::new(context)),
            || vec![Box::new(rides::receipt::RideReceipt)],
            super::rides::configure,
            super::rides::Api::openapi,
        ),
        Registered::of::<refunds::RecoveryPoint>(
            |context| Box::new(Keys::<refunds::service::RefundEndpoint>::new(context)),
            Vec::new,
            super::refunds::configure,
            super::refunds::Api::openapi,
        ),
        Registered::of::<rides::complete::RecoveryPoint>(
            |context| {
                Box::new(Keys::<rides::complete::service::CompleteEndpoint>::new(
                    context,
                ))
            },
            Vec::new,
            super::rides::complete::configure,
            super::rides::complete::Api::openapi,
        ),
        Registered::of::<rides::cancel::RecoveryPoint>(
            |context| Box::new(Keys::<rides::cancel::service::CancelEndpoint>::new(context)),
            Vec::new,
            super::rides::cancel::configure,
            super::rides::cancel::Api::openapi,
        ),
    ]
}

/// Every point where `RIDEPAY_CRASH_AT` can stop the server: the shared ones,
/// and `after-<point>` and `after-<call>` of each endpoint.
pub fn crash_points() -> Vec<String> {
    let mut points = vec![
        crash::AFTER_CLAIM.to_owned(),
        crash::GATEWAY_IN_FLIGHT.to_owned(),
        crash::AFTER_FINISHED.to_owned(),
    ];
    for endpoint in endpoints() {
        let own = endpoint.recovery_points[1..endpoint.recovery_points.len() - 1].iter();
        points.extend(
            own.chain(&endpoint.calls)
                .map(|name| crash::after_name(name)),
        );
    }
    points
}
