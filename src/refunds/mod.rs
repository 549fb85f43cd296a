//! Refunds: `POST /api/rides/{id}/refunds` (`create`), on the same
//! idempotency machinery as rides, and the refunds as the ride's model
//! keeps them (`model`).

pub mod create;
pub mod model;
