//! The gateway calling ridepay back: Stripe's events (`POST /webhooks/stripe`),
//! verified by signature, recorded once per event id, and the rider's return
//! after authenticating (`GET /payments/return`); both applied only as the
//! gateway confirms them.

pub mod apply;
pub mod callback;
pub mod connect;
pub mod event;
