//! `POST /api/rides/{id}/cancel`: the hold released, or a cancellation fee
//! captured from it.

pub mod endpoint;
mod recovery_point;
pub mod request;

pub use recovery_point::RecoveryPoint;
