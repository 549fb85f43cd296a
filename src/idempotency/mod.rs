//! The idempotency machinery: key parsing, the request fingerprint, the claim,
//! the lease with its fenced step commits, stored responses, and the request
//! flow every endpoint shares (`flow`: an endpoint supplies its steps, as an
//! `endpoint::Endpoint`).
//! Generic over an endpoint's recovery points; it knows nothing of any
//! endpoint.

pub mod awaiting;
mod call_versions;
mod claim;
pub mod completer;
pub mod endpoint;
mod existing_key;
mod finishing;
pub mod flow;
mod found;
mod key_record;
mod key_row;
mod lease;
pub mod reaper;
mod recovery_point;
mod request;
mod resume;

pub use claim::{claim, find_caller_key, lookup, Claim, FoundKey, IdempotentRequest, Requester};
pub use completer::Resolution;
pub use endpoint::{
    CallOf, Called, Endpoint, FlowContext, FoundOf, LeaseOf, Transition, TransitionOf,
};
pub use existing_key::KeyPolicy;
pub use finishing::{fenced, Finishing};
pub use flow::Outcome;
pub use found::Found;
pub use key_record::{find, oldest_unfinished_age, stuck, KeyRecord};
pub use key_row::{KeyState, StoredHeaders, StoredResponse};
pub use lease::{in_transaction, Lease};
pub use recovery_point::{RecoveryPoints, Step, FINISHED, STARTED};
pub use request::{
    CanonicalRequest, Fingerprint, GatewayCalls, IdempotencyKey, KeyError, RidepayKey,
    CURRENT_CALL_VERSION,
};
pub use resume::{drive, resolve, take_over, KeyRows};
