//! Rides: the `POST /api/rides` endpoint's request, recovery points and
//! steps, the ride's model and the transitions its payment makes, and the
//! endpoints that complete, cancel and tip a ride.

pub mod assign;
pub mod cancel;
pub mod charges;
pub mod complete;
pub mod create;
mod lock;
pub mod model;
pub mod reads;
mod settle;
pub mod tip;
pub mod transitions;
mod unpaid;
