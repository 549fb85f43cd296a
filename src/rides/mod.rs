//! Rides: the `POST /api/rides` endpoint's recovery points, phases and routes,
//! and the read routes.

pub mod model;
pub mod payment;
pub mod phases;
pub mod receipt;
mod recovery_point;
pub mod request;
pub mod service;

pub use recovery_point::RecoveryPoint;
