//! The ledger: the platform's reads of it, and the check of its
//! invariants, in the database and against the gateway. What is posted, the database's triggers write in the
//! transaction of each movement (the `ledger` migration; docs/API.md, "The
//! ledger").

pub mod against_gateway;
pub mod check;
pub mod reads;
