//! The gateway: the contract every gateway keeps (its transfers too), the
//! simulated one's PaymentIntents, the fake Stripe (its Connect events and
//! transfers too), and the Stripe client against Stripe's own
//! specification.

mod contract;
mod contract_transfers;
mod fake_connect;
mod fake_gateway;
pub(crate) mod fake_intents;
mod fake_transfers;
mod intents;
mod stripe_client;
mod stripe_end_to_end;
pub(crate) mod stripe_spec;
