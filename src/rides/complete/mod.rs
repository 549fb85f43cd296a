//! `POST /api/rides/{id}/complete`: the final fare captured, the hold raised
//! first when the fare is more than it covers.

pub mod endpoint;
mod recovery_point;
pub mod request;

pub use recovery_point::RecoveryPoint;
