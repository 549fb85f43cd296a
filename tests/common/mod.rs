//! The harness every test binary shares: a database per test, the service
//! under test with one method per endpoint, the built binary run as a child
//! process, the gateway's doubles, a webhook receiver, a real PgBouncer.
//! Each binary uses part of it.
#![allow(dead_code)]

#[cfg(feature = "simulated")]
pub mod app;
pub mod client;
pub mod database;
#[cfg(feature = "simulated")]
pub mod gateway;
pub mod ids;
#[cfg(feature = "simulated")]
pub mod keys;
pub mod pgbouncer;
pub mod raw_http;
pub mod receiver;
pub mod server_process;
pub mod settings;
pub mod test_databases;
pub mod wait;
