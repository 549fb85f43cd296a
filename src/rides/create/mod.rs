//! `POST /api/rides`: a ride asked for, and its fare held (or charged) at
//! the gateway.

pub mod endpoint;
mod recovery_point;
pub mod request;

pub use recovery_point::RecoveryPoint;
