//! The service with its default `simulated` feature: the whole contract, on
//! the simulated gateway and on the fake Stripe. One test binary, so the
//! suite starts one PostgreSQL (see `helpers`). What a build without the
//! feature must do is `tests/without_simulated.rs`.
#![cfg(feature = "simulated")]

mod architecture;
mod auth_and_routing;
mod authentication_page;
mod browser;
mod cli;
#[path = "../common/mod.rs"]
mod common;
mod concurrency;
mod crash;
mod create_ride;
mod database_faults;
mod database_urls;
mod docs;
mod embedded_default;
mod embedded_security;
mod endpoints;
mod fake_gateway;
mod fake_intents;
mod fares;
mod file_imports;
mod gateway_contract;
mod gateway_keys;
mod gateway_outcomes;
mod health;
mod hostile;
mod instances;
mod intents;
mod lifecycle;
mod log_lines;
mod migrations;
mod operations;
mod outbound_webhooks;
mod payment_return;
mod pooler;
mod prepared_statements;
mod read_rides;
mod receipts;
mod reconciliation;
mod refunds;
mod request_bodies;
mod resume;
mod statements;
mod strangers;
mod stripe_client;
mod stripe_end_to_end;
mod stripe_spec;
mod tips;
mod validation;
mod webhooks;
mod workers;
