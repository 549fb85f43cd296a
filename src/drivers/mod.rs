//! Drivers: the platform's payees, each a connected account at the gateway
//! that transfers pay once the driver has onboarded. Registered by
//! `create`, sent a new onboarding token by `onboarding_link`; `pages`
//! serves what the driver opens; `model` is their row, `reads` the
//! platform's view of them, `pay` what a ride's driver is owed,
//! `transfers` the making of it and `transfer_keys` what ties a transfer at
//! the gateway to the row that owes it.

pub mod create;
pub mod model;
pub mod onboarding_link;
pub mod pages;
pub mod pay;
pub mod reads;
pub mod reversals;
pub mod transfer_keys;
pub mod transfers;
