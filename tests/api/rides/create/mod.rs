//! `POST /api/rides`, its whole contract: what a new ride answers and
//! replays, what a request that is not one gets, and what the gateway's
//! failures make of it.

mod answers;
mod gateway_failures;
mod invalid_requests;
