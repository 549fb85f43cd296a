//! The rides: one made (`create`), read, completed or cancelled, tipped,
//! and the fares a hold covers.

mod complete_and_cancel;
mod create;
mod fares;
mod read;
mod tip;
