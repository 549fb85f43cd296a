//! Outbound webhooks: the destinations users register for their rides'
//! events (and the installation's own, for receipts), the events themselves (staged by the database in the transaction
//! of each change), and their delivery, signed by the Standard Webhooks
//! specification, at least once.

pub mod actions;
pub mod deliveries;
pub mod delivery;
pub mod events;
pub mod installation;
pub mod model;
pub mod register;
pub mod signing;
