//! Refunds: the `POST /api/rides/{id}/refunds` endpoint's recovery points,
//! phases and routes, on the same idempotency machinery as rides, and the
//! read routes.

pub mod endpoint;
pub mod model;
mod recovery_point;
pub mod request;

pub use recovery_point::RecoveryPoint;
