//! PaymentIntents, as ridepay pays through them: a hold placed when a ride is
//! requested (or a charge, with `capture_method=automatic`), captured,
//! raised or cancelled later, and the rider's authentication (3-D Secure)
//! when the bank asks for it. The types say what ridepay reads of Stripe's
//! objects, whatever gateway answers.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

ridepay_diesel_helpers::text_enum! {
    /// When the money moves: at once, or when ridepay captures the hold.
    pub enum CaptureMethod {
        /// A hold now, captured at the ride's end (ridepay's default).
        Manual = "manual",
        /// Charged at once, as Rocket Rides did.
        Automatic = "automatic",
    }
}

ridepay_diesel_helpers::text_enum! {
    /// A PaymentIntent's status, as Stripe names them.
    pub enum IntentStatus {
        /// Declined, or the authentication failed: nothing held or paid.
        RequiresPaymentMethod = "requires_payment_method",
        RequiresConfirmation = "requires_confirmation",
        /// The rider must authenticate (`next_action`).
        RequiresAction = "requires_action",
        /// The payment method settles later; an event tells how.
        Processing = "processing",
        /// Held: `amount_capturable` may be captured.
        RequiresCapture = "requires_capture",
        Canceled = "canceled",
        /// Paid: `amount_received`.
        Succeeded = "succeeded",
    }
}

/// What the rider must do before the payment can go on: for
/// `redirect_to_url`, open `url` in a browser, which the gateway sends back
/// to `return_url`; for any other kind (`use_stripe_sdk`, ...), an app hands
/// the client secret to Stripe's SDK.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextAction {
    pub kind: String,
    pub url: Option<String>,
    pub return_url: Option<String>,
}

/// Why the last attempt failed (a decline, a failed authentication).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentError {
    pub code: Option<String>,
    pub decline_code: Option<String>,
    pub message: Option<String>,
}

/// The balance transaction of a captured charge: what the gateway moved
/// into the platform's balance, and its fee. `exchange_rate` is set when
/// the gateway settled the charge in another currency, whose minor units
/// `amount_cents`, `fee_cents` and `net_cents` then are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BalanceTransaction {
    /// A `txn_` id.
    pub id: String,
    pub amount_cents: i64,
    pub fee_cents: i64,
    /// `amount_cents - fee_cents`: what the platform's balance gained.
    pub net_cents: i64,
    pub currency: String,
    pub exchange_rate: Option<f64>,
}

/// A PaymentIntent as the gateway holds it now.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PaymentIntent {
    pub id: String,
    /// When the gateway made it (Stripe's `created`, whole seconds).
    pub created: DateTime<Utc>,
    pub status: IntentStatus,
    pub amount_cents: i64,
    pub amount_capturable_cents: i64,
    pub amount_received_cents: i64,
    pub currency: String,
    pub capture_method: CaptureMethod,
    /// Lets the rider's browser or app finish an authentication; never
    /// logged.
    pub client_secret: Option<String>,
    pub next_action: Option<NextAction>,
    pub latest_charge: Option<String>,
    pub last_payment_error: Option<PaymentError>,
    /// `requested_by_customer`, `abandoned`, or `automatic` (a hold that
    /// lapsed), once canceled.
    pub cancellation_reason: Option<String>,
    /// Whether the card holder's bank disputes the payment.
    #[serde(default)]
    pub disputed: bool,
    pub metadata: BTreeMap<String, String>,
    /// What a hold lets be captured without asking the card again: more
    /// than the hold when the card allows overcapture (its charge's
    /// `card.overcapture.maximum_amount_capturable`, status `available`);
    /// `None` when it does not, or once nothing is held.
    #[serde(default)]
    pub amount_capturable_max_cents: Option<i64>,
    /// When a hold lapses (its charge's `card.capture_before`): seven days
    /// after it was placed, up to 30 with an extended authorization.
    #[serde(default)]
    pub capture_before: Option<DateTime<Utc>>,
    /// The latest charge's balance transaction, with the gateway's fee:
    /// present when the call asked for it and the charge has been captured
    /// (a charge not yet captured has none).
    #[serde(default)]
    pub balance_transaction: Option<BalanceTransaction>,
    /// Whether the gateway answered from what it saved under the call's
    /// key (Stripe's `Idempotent-Replayed: true`) rather than by acting
    /// now: the intent as it was then, which may have changed since.
    #[serde(default, skip_serializing)]
    pub replayed: bool,
}

impl PaymentIntent {
    /// The latest charge, once it has captured money: the one the ledger
    /// posts.
    pub fn captured_charge(&self) -> Option<&str> {
        self.latest_charge
            .as_deref()
            .filter(|_| self.amount_received_cents > 0)
    }

    /// The latest charge's balance transaction when it settled in the
    /// intent's own currency: the one whose fee the ledger posts as the
    /// capture is recorded (one settled in another currency is recorded
    /// by reconciliation, which posts its conversion with the fee).
    pub fn settled_in_own_currency(&self) -> Option<&BalanceTransaction> {
        self.balance_transaction
            .as_ref()
            .filter(|txn| txn.currency == self.currency && txn.exchange_rate.is_none())
    }
}

/// The same intent whether or not the gateway answered it again from what
/// it saved: `replayed` says how it came, not what it is.
impl PartialEq for PaymentIntent {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.created == other.created
            && self.status == other.status
            && self.amount_cents == other.amount_cents
            && self.amount_capturable_cents == other.amount_capturable_cents
            && self.amount_received_cents == other.amount_received_cents
            && self.currency == other.currency
            && self.capture_method == other.capture_method
            && self.client_secret == other.client_secret
            && self.next_action == other.next_action
            && self.latest_charge == other.latest_charge
            && self.last_payment_error == other.last_payment_error
            && self.cancellation_reason == other.cancellation_reason
            && self.disputed == other.disputed
            && self.metadata == other.metadata
            && self.amount_capturable_max_cents == other.amount_capturable_max_cents
            && self.capture_before == other.capture_before
            && self.balance_transaction == other.balance_transaction
    }
}

/// An exchange rate read from JSON is never NaN, so equality is total.
impl Eq for PaymentIntent {}

/// Creates and confirms a PaymentIntent, exactly once per
/// `idempotency_key`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreateIntent {
    /// Derived from the client's key row: the same on every retry.
    pub idempotency_key: String,
    pub amount_cents: i64,
    pub currency: String,
    pub customer: Option<String>,
    /// A `pm_` id.
    pub payment_method: String,
    pub capture_method: CaptureMethod,
    /// Where the rider's browser lands after authenticating.
    pub return_url: String,
    pub metadata: Vec<(String, String)>,
    /// What a hold asks of the card beyond the fare (ignored for a payment
    /// captured at once). Left out of the call's parameters when it is the
    /// increments alone, as every call made before the others were asked.
    #[serde(skip_serializing_if = "HoldRequest::is_increments_only")]
    pub hold: HoldRequest,
    /// Charged without the rider there (a tip after the ride, on the saved
    /// card): a card that would need them to authenticate is declined
    /// (`authentication_required`) rather than asking. Left out of the
    /// call's parameters when false, as every call made before tips.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub off_session: bool,
    /// Names the payment for the transfers made from it (Stripe's
    /// `transfer_group`). Left out of the call's parameters when `None`,
    /// as every call made before it was sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_group: Option<String>,
    /// Whether the answer brings the charge's balance transaction, once
    /// captured (`expand[]=latest_charge.balance_transaction`). Left out of
    /// the call's parameters when false, as every call made before it was
    /// asked.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub expand_balance_transaction: bool,
}

/// The card features a hold asks for, each `if_available`: raising it
/// later (`request_incremental_authorization`), capturing more than it
/// (`request_overcapture`), and lasting up to 30 days
/// (`request_extended_authorization`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HoldRequest {
    pub incremental: bool,
    pub overcapture: bool,
    pub extended: bool,
}

impl HoldRequest {
    /// What holds asked for before overcapture and extended holds.
    pub const INCREMENTS_ONLY: HoldRequest = HoldRequest {
        incremental: true,
        overcapture: false,
        extended: false,
    };
    /// Everything card networks give ride-hailing.
    pub const RIDE_HAILING: HoldRequest = HoldRequest {
        incremental: true,
        overcapture: true,
        extended: true,
    };

    pub fn is_increments_only(&self) -> bool {
        *self == Self::INCREMENTS_ONLY
    }
}

/// Captures (part of) a hold: what is not captured is released.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaptureIntent {
    pub idempotency_key: String,
    pub intent_id: String,
    pub amount_to_capture_cents: i64,
    /// As `CreateIntent::expand_balance_transaction`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub expand_balance_transaction: bool,
}

/// Raises a hold to `amount_cents`, the new total.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IncrementIntent {
    pub idempotency_key: String,
    pub intent_id: String,
    pub amount_cents: i64,
}

/// Cancels a PaymentIntent, releasing its hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CancelIntent {
    pub idempotency_key: String,
    pub intent_id: String,
    /// `requested_by_customer`, `abandoned`, `duplicate` or `fraudulent`.
    pub cancellation_reason: String,
}
