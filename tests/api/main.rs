//! One test binary, so the suite starts one PostgreSQL (see `helpers`).

mod auth_and_routing;
mod cli;
mod concurrency;
mod crash;
mod create_ride;
mod database_faults;
mod embedded_default;
mod embedded_security;
mod fake_gateway;
mod gateway_contract;
mod gateway_outcomes;
mod health;
mod helpers;
mod hostile;
mod instances;
mod operations;
mod prepared_statements;
mod read_rides;
mod refunds;
mod resume;
mod server_process;
mod stripe_client;
mod stripe_end_to_end;
mod validation;
mod webhooks;
mod workers;
