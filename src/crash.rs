//! Crash points for the crash-safety tests: `RIDEPAY_CRASH_AT=<point>` makes a
//! debug build abort the whole process at that point, as a kill would. A panic
//! would not do: inside `web::block` it is caught and the server lives on.
//! Release builds compile the hook away.

/// Every point where a test may crash the server.
pub const POINTS: [&str; 9] = [
    AFTER_CLAIM,
    AFTER_RIDE_CREATED,
    GATEWAY_IN_FLIGHT,
    AFTER_CHARGE,
    AFTER_CHARGE_COMPLETED,
    AFTER_FINISHED,
    AFTER_REFUND_CREATED,
    AFTER_REFUND,
    AFTER_REFUND_COMPLETED,
];

/// Inside the first transaction, after the claim and before RideCreated.
pub const AFTER_CLAIM: &str = "after-claim";
/// After the first transaction (claim + RideCreated) committed.
pub const AFTER_RIDE_CREATED: &str = "after-ride-created";
/// While the gateway is working on the charge (or refund), before it records it.
pub const GATEWAY_IN_FLIGHT: &str = "gateway-in-flight";
/// After the gateway charged, before the charge is recorded.
pub const AFTER_CHARGE: &str = "after-charge";
/// Inside the last transaction, after ChargeCompleted and before Finished.
pub const AFTER_CHARGE_COMPLETED: &str = "after-charge-completed";
/// After the response is stored, before it is written to the client.
pub const AFTER_FINISHED: &str = "after-finished";
/// After the refund's first transaction (claim + RefundCreated) committed.
pub const AFTER_REFUND_CREATED: &str = "after-refund-created";
/// After the gateway refunded, before the refund is recorded.
pub const AFTER_REFUND: &str = "after-refund";
/// Inside the refund's last transaction, after RefundCompleted and before
/// Finished.
pub const AFTER_REFUND_COMPLETED: &str = "after-refund-completed";

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
