//! The chaos campaign: two ridepay instances killed and restarted at random
//! under retrying clients, a webhook receiver that fails now and then,
//! drivers paid, restricted and paid out, then an audit of the database,
//! the ledger, the gateway's records and the webhooks taken against what
//! the clients saw.

pub mod audit;
pub mod campaign;
pub mod drivers;
pub mod fleet;
pub mod gateway;
pub mod history;
pub mod options;
pub mod receiver;
pub mod retrying_client;
pub mod ride_life;
pub mod summary;

pub use campaign::run;
pub use options::{GatewayChoice, Options};
