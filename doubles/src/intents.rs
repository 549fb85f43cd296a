//! The doubles' PaymentIntents, in `simulated_payment_intents`: the
//! simulated gateway and the fake Stripe both keep theirs here, so both treat
//! test payment methods, keys and holds alike.
//!
//! Test payment methods behave as in Stripe's test mode, and ridepay names
//! its own for the paths Stripe has no card for (`cards.rs`). Every call is
//! once per caller's key (`simulated_intent_calls`, `kept_calls.rs`): the
//! same key and parameters get the first answer again, in the state it had
//! then; other parameters are refused as Stripe refuses them. An intent is
//! read as `stored.rs` keeps it, changed as `changes.rs` guards it, and its
//! clock (holds that lapse, payments that settle) runs whenever it is read
//! (`clock.rs`). The calls are `operations.rs`; the rider's authentication
//! and disputes have files of their own.

mod authentication;
mod cards;
mod changes;
mod clock;
mod disputes;
mod errors;
mod kept_calls;
mod listing;
mod one_statement;
mod operations;
mod settings;
mod stored;

pub use authentication::{authenticate, authenticating, Authenticating, Authentication};
pub use cards::DECLINE_MESSAGE;
pub(crate) use changes::locked;
pub(crate) use clock::{from_now, sweep, whole_seconds};
pub use clock::{lapse_now, PROCESSING_SETTLES_AFTER};
pub use disputes::open_dispute;
pub(crate) use errors::{storage, transaction};
pub use kept_calls::{forget_older_than, is_kept, save_failure};
pub(crate) use kept_calls::{Call, Replayable};
pub use listing::{list, search};
pub use operations::{cancel, capture, create, increment, retrieve};
pub use settings::IntentSettings;
pub(crate) use stored::random_id;
