//! ridepay: a ride-payment REST API whose writes are safe to retry.
//!
//! - [`idempotency`]: keys, the claim, leases with fencing, stored responses;
//!   generic over an endpoint's recovery points.
//! - [`payments`]: the gateway trait and its implementations.
//! - [`wire`]: the API's answers as they are on the wire.
//! - [`rides`], [`refunds`], [`user_webhooks`]: the endpoints, each in a
//!   file of its own, on the same machinery; [`endpoints`] lists them.
//! - [`gateway_events`]: the gateway's events, verified and applied once.
//! - [`http`]: the routes, on actix-web.

pub mod audit;
pub mod backoff;
pub mod cli;
pub mod config;
pub mod context;
pub mod crash;
pub mod db;
pub mod doorbell;
pub mod drivers;
pub mod embedded_postgres;
pub mod endpoints;
pub mod gateway_events;
pub mod http;
pub mod http_client;
pub mod idempotency;
pub mod ids;
pub mod ledger;
pub mod pages;
pub mod payments;
pub mod public_ids;
pub mod reconciliation;
pub mod refunds;
pub mod rides;
pub mod schema;
pub mod service_error;
pub mod startup;
pub mod telemetry;
pub mod user_webhooks;
pub mod users;
pub mod validation;
pub mod wire;
