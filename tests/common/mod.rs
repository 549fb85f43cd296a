//! The harness every test binary shares: settings for a test server, the
//! built binary run as a child process, a real PgBouncer. Each binary uses
//! part of it.
#![allow(dead_code)]

pub mod database;
pub mod pgbouncer;
pub mod server_process;
pub mod settings;
