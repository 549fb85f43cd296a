//! What ridepay's chaos campaign (`chaos`) and benchmark (`bench`) share: the
//! `ridepay` binary and its child processes, a PostgreSQL for the run, the
//! HTTP client of a virtual user, latency figures and tables.

pub mod bench;
pub mod binary;
pub mod chaos;
pub mod client;
pub mod database;
pub mod latency;
pub mod process;
pub mod ridepay;
pub mod stage;
pub mod table;
