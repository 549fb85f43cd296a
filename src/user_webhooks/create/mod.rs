//! `POST /api/webhook_endpoints`: a destination registered, once its host
//! is found to resolve only to addresses it may reach.

pub mod endpoint;
mod recovery_point;
pub mod request;

pub use recovery_point::RecoveryPoint;
