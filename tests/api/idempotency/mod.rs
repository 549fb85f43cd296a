//! What every idempotent endpoint keeps: one answer per key under
//! concurrency, crashes and takeovers, derived gateway keys, a budget of
//! statements, and the list of endpoints the database knows.

mod concurrency;
mod crash;
mod endpoints;
mod gateway_keys;
mod instances;
mod prepared_statements;
mod resume;
mod statements;
