//! `POST /webhooks/stripe`: Stripe's events, verified by signature, recorded
//! once per event id, and applied only as the gateway confirms them.

pub mod event;
pub mod reconcile;
