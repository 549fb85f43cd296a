//! One test binary, so the suite starts one PostgreSQL (see `helpers`).

mod auth_and_routing;
mod concurrency;
mod create_ride;
mod fake_gateway;
mod gateway_contract;
mod gateway_outcomes;
mod health;
mod helpers;
mod read_rides;
mod resume;
mod stripe_client;
mod stripe_end_to_end;
mod validation;
