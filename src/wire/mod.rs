//! ridepay's API as it is on the wire, with its OpenAPI schemas: the request
//! bodies as sent, the ride and the refund as answered, and where each
//! lives. The answers a key stores are rendered in its fenced transaction,
//! below the HTTP layer, so they are rendered here, where the endpoints'
//! steps reach them as `http/` does. Nothing here knows actix.

pub mod answer;
pub mod destination;
pub mod driver;
pub mod event;
mod field_error;
pub mod ledger;
pub mod problem;
pub mod refund;
pub mod ride;
pub mod ride_actions;
pub mod webhook_delivery;
