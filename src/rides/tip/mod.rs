//! `POST /api/rides/{id}/tip`: a tip added to what a held ride's completion
//! captures, or paid after the fare by a PaymentIntent of its own.

pub mod endpoint;
mod recovery_point;
pub mod request;

pub use recovery_point::RecoveryPoint;
