//! One test binary, so the suite starts one PostgreSQL (see `helpers`).

mod auth_and_routing;
mod cli;
mod concurrency;
mod crash;
mod create_ride;
mod database_faults;
mod gateway_outcomes;
mod health;
mod helpers;
mod instances;
mod read_rides;
mod resume;
mod server_process;
mod validation;
mod workers;
