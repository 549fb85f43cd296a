//! The ledger: the platform's reads of it, the check of its invariants,
//! in the database and against the gateway, and the fees of the charges
//! captured before it started. What is posted, the database's triggers
//! write in the transaction of each movement (the `ledger` migration;
//! docs/API.md, "The ledger").

pub mod against_gateway;
pub mod check;
pub mod opening_fees;
pub mod reads;
pub mod transfers_against_gateway;
