//! Running ridepay: health, metrics, logs and shutdown, the command line,
//! the background workers, reconciliation, the database (its URLs, faults,
//! pooler, migrations) and the embedded PostgreSQL of `cargo run`.

mod cli;
mod database_faults;
mod database_urls;
mod embedded_default;
mod embedded_security;
mod gateway_controls;
mod health;
mod log_lines;
pub(crate) mod migrations;
mod pooler;
mod reconciliation;
mod service;
pub(crate) mod workers;
