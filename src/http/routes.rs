//! The HTTP half of the endpoint list (`crate::endpoints` is the other): the
//! routes of each idempotent endpoint, under `/api`, and its part of the
//! OpenAPI document, in the same order.

use actix_web::web::ServiceConfig;

use super::webhook_endpoints::actions as webhook_actions;
use crate::idempotency::RecoveryPoints;
use crate::outbound_webhooks::actions;
use crate::{outbound_webhooks, refunds, rides};

/// One endpoint's routes, the reads of its resource included, and its
/// OpenAPI part.
pub struct Routed {
    /// The endpoint's name, as `crate::endpoints` lists it.
    pub name: &'static str,
    pub routes: fn(&mut ServiceConfig),
    pub openapi: fn() -> utoipa::openapi::OpenApi,
}

/// Every idempotent endpoint's routes, in the order of
/// `crate::endpoints::all`.
pub fn endpoints() -> Vec<Routed> {
    use utoipa::OpenApi;
    vec![
        Routed {
            name: rides::create::RecoveryPoint::ENDPOINT,
            routes: super::rides::configure,
            openapi: super::rides::Api::openapi,
        },
        Routed {
            name: refunds::RecoveryPoint::ENDPOINT,
            routes: super::refunds::configure,
            openapi: super::refunds::Api::openapi,
        },
        Routed {
            name: rides::complete::RecoveryPoint::ENDPOINT,
            routes: super::rides::complete::configure,
            openapi: super::rides::complete::Api::openapi,
        },
        Routed {
            name: rides::cancel::RecoveryPoint::ENDPOINT,
            routes: super::rides::cancel::configure,
            openapi: super::rides::cancel::Api::openapi,
        },
        Routed {
            name: rides::tip::RecoveryPoint::ENDPOINT,
            routes: super::rides::tip::configure,
            openapi: super::rides::tip::Api::openapi,
        },
        Routed {
            name: outbound_webhooks::create::RecoveryPoint::ENDPOINT,
            routes: super::webhook_endpoints::configure,
            openapi: super::webhook_endpoints::Api::openapi,
        },
        Routed {
            name: actions::retry::RecoveryPoint::ENDPOINT,
            routes: webhook_actions::configure_retry,
            openapi: webhook_actions::RetryApi::openapi,
        },
        Routed {
            name: actions::roll_secret::RecoveryPoint::ENDPOINT,
            routes: webhook_actions::configure_roll_secret,
            openapi: webhook_actions::RollSecretApi::openapi,
        },
        Routed {
            name: actions::test_event::RecoveryPoint::ENDPOINT,
            routes: webhook_actions::configure_test_event,
            openapi: webhook_actions::TestEventApi::openapi,
        },
    ]
}
