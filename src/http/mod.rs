//! The HTTP layer, and the only one that knows actix: extractors, the
//! problem responses, the routes of every endpoint, the OpenAPI document,
//! `/metrics` and the health routes. It imports the layers below; nothing
//! below imports it.

pub mod access_log;
pub mod auth;
#[cfg(feature = "simulated")]
pub mod authentication_page;
pub mod body;
pub mod driver_pages;
pub mod drivers;
pub mod gateway_events;
pub mod health;
pub mod idempotent;
pub mod ledger;
pub mod metrics;
#[cfg(feature = "simulated")]
pub mod onboarding_page;
pub mod openapi;
pub mod openapi_components;
pub mod owing_drivers;
pub mod pagination;
pub mod payment_return;
pub mod problem;
pub mod rate_limit;
pub mod reading;
pub mod refunds;
pub mod request_id;
pub mod rides;
pub mod routes;
pub mod routing;
pub mod server;
pub mod webhook_endpoints;
