//! The ledger: its guards, held by the database itself.

mod guards;
mod opening;
