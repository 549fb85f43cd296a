//! The idempotency machinery: key parsing, the request fingerprint, the claim,
//! the lease with its fenced phase commits, stored responses, and the request
//! flow every endpoint shares (`flow`: an endpoint supplies its steps, as an
//! `endpoint::Endpoint`).
//! Generic over an endpoint's recovery points; it knows nothing of any
//! endpoint.

pub mod awaiting;
mod canonical;
mod claim;
pub mod completer;
pub mod endpoint;
mod fingerprint;
mod finishing;
pub mod flow;
mod gateway_calls;
mod key;
mod lease;
mod policy;
pub mod reaper;
mod record;
mod recovery_point;
mod stored_response;

pub use canonical::CanonicalRequest;
pub use claim::{
    claim, find_caller_key, lookup, take_over, Claim, FoundKey, IdempotentRequest, Requester,
};
pub use completer::Resolution;
pub use endpoint::{
    CallOf, Called, Endpoint, FlowContext, Found, FoundOf, LeaseOf, Transition, TransitionOf,
};
pub use fingerprint::Fingerprint;
pub use finishing::{fenced, Finishing};
pub use flow::{KeyRows, Outcome};
pub use gateway_calls::{GatewayCalls, RidepayKey, CURRENT_CALL_VERSION};
pub use key::{IdempotencyKey, KeyError};
pub use lease::{in_transaction, Lease};
pub use policy::KeyPolicy;
pub use record::{find, oldest_unfinished_age, stuck, KeyRecord, KeyState};
pub use recovery_point::{RecoveryPoints, Step, FINISHED, STARTED};
pub use stored_response::{StoredHeaders, StoredResponse};
