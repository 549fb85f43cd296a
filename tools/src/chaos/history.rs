//! What the clients did and saw, kept for the audit and the summary.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use serde_json::json;

use crate::client::{ride_body, Answer};

/// What a ride key's payment method and capture method should lead to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// Paid at once (automatic capture).
    Captured,
    /// The fare held (manual capture) until the ride is completed or
    /// cancelled.
    Authorized,
    /// Held, on a card that declines any raise of the hold.
    AuthorizedNoRaise,
    Declined,
}

impl Expected {
    /// One of Stripe's test payment methods, or ridepay's; `None` for the
    /// user's saved card (`pm_card_visa`), which a tip after the capture
    /// is charged to, off session.
    pub fn payment_method(self) -> Option<&'static str> {
        match self {
            Expected::Captured => None,
            Expected::Authorized => Some("pm_card_visa"),
            Expected::AuthorizedNoRaise => Some("pm_card_ridepay_incrementDeclined"),
            Expected::Declined => Some("pm_card_visa_chargeDeclined"),
        }
    }

    pub fn capture_method(self) -> &'static str {
        match self {
            Expected::Captured => "automatic",
            _ => "manual",
        }
    }

    pub fn status(self) -> u16 {
        match self {
            Expected::Declined => 402,
            _ => 201,
        }
    }

    /// The statuses the ride may be in once its key is finished, whatever
    /// its client did with it next.
    pub fn ride_statuses(self) -> &'static [&'static str] {
        match self {
            Expected::Captured => &["captured", "refunded"],
            Expected::Authorized | Expected::AuthorizedNoRaise => {
                &["authorized", "captured", "canceled", "refunded"]
            }
            Expected::Declined => &["payment_declined"],
        }
    }
}

/// What a key asked for. A ride is named by the id its answer gave, an
/// opaque string (`ride_...`), kept and sent back exactly as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Ride {
        amount_cents: i64,
        expected: Expected,
    },
    Complete {
        ride_id: String,
        final_amount_cents: i64,
        /// The fare is above the hold and the card declines the raise.
        raise_declines: bool,
    },
    Cancel {
        ride_id: String,
        fee_cents: i64,
    },
    Refund {
        ride_id: String,
        amount_cents: i64,
    },
    Tip {
        ride_id: String,
        amount_cents: i64,
    },
    /// A driver registered by the platform.
    Driver {
        email: String,
    },
    /// The ride's driver, assigned by the platform.
    Assign {
        ride_id: String,
        driver_id: String,
    },
}

impl Request {
    /// What the summary counts its answers under.
    pub fn name(&self) -> &'static str {
        match self {
            Request::Ride { .. } => "ride",
            Request::Complete { .. } => "complete",
            Request::Cancel { .. } => "cancel",
            Request::Refund { .. } => "refund",
            Request::Tip { .. } => "tip",
            Request::Driver { .. } => "driver",
            Request::Assign { .. } => "assign",
        }
    }

    pub fn path(&self) -> String {
        match self {
            Request::Ride { .. } => "/api/rides".to_owned(),
            Request::Complete { ride_id, .. } => format!("/api/rides/{ride_id}/complete"),
            Request::Cancel { ride_id, .. } => format!("/api/rides/{ride_id}/cancel"),
            Request::Refund { ride_id, .. } => format!("/api/rides/{ride_id}/refunds"),
            Request::Tip { ride_id, .. } => format!("/api/rides/{ride_id}/tip"),
            Request::Driver { .. } => "/api/drivers".to_owned(),
            Request::Assign { ride_id, .. } => format!("/api/rides/{ride_id}/driver"),
        }
    }

    pub fn body(&self) -> Bytes {
        let body = match self {
            Request::Ride {
                amount_cents,
                expected,
            } => {
                return ride_body(
                    *amount_cents,
                    expected.payment_method(),
                    expected.capture_method(),
                )
            }
            Request::Complete {
                final_amount_cents, ..
            } => json!({ "final_amount_cents": final_amount_cents }),
            Request::Cancel { fee_cents, .. } => json!({ "cancellation_fee_cents": fee_cents }),
            Request::Refund { amount_cents, .. } | Request::Tip { amount_cents, .. } => {
                json!({ "amount_cents": amount_cents })
            }
            Request::Driver { email } => json!({ "email": email, "country": "US" }),
            Request::Assign { driver_id, .. } => json!({ "driver_id": driver_id }),
        };
        Bytes::from(body.to_string())
    }

    /// The final answer the request should get.
    pub fn expected_status(&self) -> u16 {
        match self {
            Request::Ride { expected, .. } => expected.status(),
            Request::Complete {
                raise_declines: true,
                ..
            } => 402,
            Request::Complete { .. }
            | Request::Cancel { .. }
            | Request::Tip { .. }
            | Request::Assign { .. } => 200,
            Request::Refund { .. } | Request::Driver { .. } => 201,
        }
    }

    /// The ride it is about, once the ride exists.
    pub fn ride_id(&self) -> Option<&str> {
        match self {
            Request::Ride { .. } | Request::Driver { .. } => None,
            Request::Complete { ride_id, .. }
            | Request::Cancel { ride_id, .. }
            | Request::Refund { ride_id, .. }
            | Request::Tip { ride_id, .. }
            | Request::Assign { ride_id, .. } => Some(ride_id),
        }
    }

    /// What a 200 answer to it says was captured: for a completion, the
    /// final fare (a tip the ride has is captured with it).
    pub fn captured_cents(&self) -> Option<i64> {
        match self {
            Request::Complete {
                final_amount_cents, ..
            } => Some(*final_amount_cents),
            Request::Cancel { fee_cents, .. } => Some(*fee_cents),
            _ => None,
        }
    }
}

/// One key's life as its client saw it.
#[derive(Debug, Clone)]
pub struct KeyHistory {
    pub key: String,
    pub request: Request,
    /// The first final answer; None when the client gave up.
    pub first_final: Option<Answer>,
    /// A later request with the same key got another answer.
    pub replay_mismatch: Option<String>,
}

/// Counts by name, for the summary.
#[derive(Debug, Default)]
pub struct Tally(Mutex<BTreeMap<String, u64>>);

impl Tally {
    pub fn add(&self, name: impl Into<String>) {
        *self.0.lock().unwrap().entry(name.into()).or_default() += 1;
    }

    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap().clone()
    }
}

#[derive(Debug, Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub retries: AtomicU64,
    pub kills: AtomicU64,
    /// Transient answers and errors that made a client retry, by kind.
    pub faults: Tally,
    /// First final answers, and keys given up, by kind.
    pub outcomes: Tally,
}

impl Counters {
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}
