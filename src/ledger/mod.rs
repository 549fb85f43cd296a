//! The ledger as the platform's key reads it. What is posted, the
//! database's triggers write in the transaction of each movement (the
//! `ledger` migration; docs/API.md, "The ledger").

pub mod reads;
