//! The service with its default `simulated` feature: the whole contract, on
//! the simulated gateway and on the fake Stripe. One test binary, so the
//! suite starts one PostgreSQL (see `common::test_databases`). What a build without the
//! feature must do is `tests/without_simulated.rs`.
#![cfg(feature = "simulated")]

mod codebase;
#[path = "../common/mod.rs"]
mod common;
mod drivers;
mod gateway;
mod gateway_events;
mod guards;
mod idempotency;
mod ledger;
mod operations;
mod pages;
mod public_ids;
mod refunds;
mod rides;
mod webhook_endpoints;
