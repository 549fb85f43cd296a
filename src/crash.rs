//! Crash points for the crash-safety tests: `RIDEPAY_CRASH_AT=<point>` makes a
//! debug build abort the whole process at that point, as a kill would. A panic
//! would not do: inside `web::block` it is caught and the server lives on.
//! Release builds compile the hook away.
//!
//! The idempotency flow fires `after-<point>` when a key reaches each of its
//! endpoint's recovery points (inside the transaction when another atomic
//! step follows in it, else once it committed) and `after-<call>` when a call
//! to the outside world returned; the endpoint registry lists them all
//! (`endpoints::crash_points`). The shared ones are named here.

/// Inside the claim's transaction, before the first step.
pub const AFTER_CLAIM: &str = "after-claim";
/// While the gateway is working on a call, before it answers.
pub const GATEWAY_IN_FLIGHT: &str = "gateway-in-flight";
/// After the response is stored, before it is written to the client.
pub const AFTER_FINISHED: &str = "after-finished";
/// The transfer worker's: after its claim of transfers (or reversals)
/// committed, and after the gateway answered one, before it is recorded.
pub const TRANSFER_WORKER: [&str; 4] = [
    "after-transfers-claimed",
    "after-transfer",
    "after-reversals-claimed",
    "after-reversal",
];

/// `after-<name>`, with a point's underscores as dashes (`ride_created` is
/// `after-ride-created`).
pub fn after_name(name: &str) -> String {
    format!("after-{}", name.replace('_', "-"))
}

/// The crash point `after-<name>`.
pub fn after(name: &str) {
    if cfg!(debug_assertions) {
        point(&after_name(name));
    }
}

#[cfg(debug_assertions)]
pub fn point(name: &str) {
    use std::sync::OnceLock;
    static ARMED: OnceLock<Option<String>> = OnceLock::new();
    let armed = ARMED.get_or_init(|| std::env::var("RIDEPAY_CRASH_AT").ok());
    if armed.as_deref() == Some(name) {
        eprintln!("ridepay: crashing at {name} (RIDEPAY_CRASH_AT)");
        std::process::abort();
    }
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn point(_name: &str) {}
