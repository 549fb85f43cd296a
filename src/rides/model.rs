//! The `rides` table: the read model, the insert model and the queries.

use chrono::{DateTime, Utc};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::QueryFragment;
use serde::Deserialize;
use serde_json::{json, Value};

use super::charges::ChargeRecord;
use crate::audit;
use crate::db::{recorded, CacheStatement, Recorded};
use crate::drivers::model::{ride_driver, RideDriver};
use crate::idempotency::fenced;
use crate::ids::{KeyId, RideId, UserId};
use crate::payments::CaptureMethod;
use crate::public_ids::{DriverPublicId, RidePublicId};
use crate::schema::rides;
use crate::wire::ride::RideJson;

/// What a fare may be, for every endpoint that takes an amount: its
/// currencies and its bounds, in minor units.
pub const CURRENCIES: [&str; 3] = ["usd", "eur", "gbp"];
pub const MIN_AMOUNT_CENTS: i64 = 50;
pub const MAX_AMOUNT_CENTS: i64 = 1_000_000;

ridepay_diesel_helpers::text_enum! {
    /// A ride's payment status, stored as text (with a CHECK). `docs/API.md`
    /// draws how one leads to another; each transition is applied once and
    /// only forward.
    pub enum RideStatus {
        /// The ride exists; the gateway has not answered yet.
        Pending = "pending",
        /// The rider must authenticate the card (`next_action`).
        RequiresAction = "requires_action",
        /// The payment settles later; an event tells how.
        Processing = "processing",
        /// The fare is held, to be captured when the ride ends.
        Authorized = "authorized",
        Captured = "captured",
        /// Cancelled: the hold released, or a fee captured.
        Canceled = "canceled",
        /// The hold lapsed at the gateway before the ride was completed.
        Expired = "expired",
        PaymentDeclined = "payment_declined",
        PaymentFailed = "payment_failed",
        Refunded = "refunded",
        Disputed = "disputed",
    }
}

/// A ride and the state of its payment. Read from its row, or from the row
/// an event staged (`to_jsonb`), whose columns are its fields.
#[derive(Debug, Clone, Queryable, Selectable, Deserialize)]
#[diesel(table_name = rides, check_for_backend(diesel::pg::Pg))]
pub struct Ride {
    /// The row's key, for joins; the API never shows it.
    pub id: RideId,
    /// The id the API shows, derived from the request that made the ride.
    pub public_id: RidePublicId,
    pub user_id: UserId,
    pub idempotency_key_id: Option<KeyId>,
    pub origin_lat: f64,
    pub origin_lon: f64,
    pub target_lat: f64,
    pub target_lon: f64,
    /// The upfront fare, which the hold covers.
    pub amount_cents: i64,
    pub amount_refunded_cents: i64,
    pub currency: String,
    /// A `pm_` id (a ride paid through the Charges API: its `tok_` or `cus_`).
    pub payment_method: String,
    pub status: RideStatus,
    /// The Charges API charge of a ride paid through the Charges API.
    pub charge_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub capture_method: CaptureMethod,
    pub customer: Option<String>,
    pub return_url: Option<String>,
    pub payment_intent_id: Option<String>,
    pub client_secret: Option<String>,
    /// The gateway's next action, in Stripe's shape, while `requires_action`.
    pub next_action: Option<Value>,
    pub amount_authorized_cents: i64,
    pub amount_captured_cents: i64,
    /// The key completing or cancelling the ride, while it does.
    pub settling_key_id: Option<KeyId>,
    /// While held: what may be captured without asking the card again.
    pub amount_capturable_max_cents: Option<i64>,
    /// While held: when the hold lapses.
    pub hold_expires_at: Option<DateTime<Utc>>,
    /// The tip: on a held ride, what the completion captures beside the
    /// fare; on a captured one, what its own PaymentIntent took.
    pub tip_cents: i64,
    /// The tip's own PaymentIntent, for a tip after the fare was captured.
    pub tip_payment_intent_id: Option<String>,
    /// Its driver, once assigned, read with the ride.
    #[diesel(select_expression = ride_driver(), select_expression_type = RideDriver)]
    #[serde(skip)]
    pub driver: Option<DriverPublicId>,
}

impl Ride {
    /// The ride as the API shows it.
    pub fn json(&self) -> RideJson<'_> {
        let next_action = match (&self.next_action, self.status) {
            (Some(Value::Object(action)), RideStatus::RequiresAction) => {
                let mut action = action.clone();
                action.insert("client_secret".to_owned(), json!(self.client_secret));
                Some(Value::Object(action))
            }
            _ => None,
        };
        RideJson {
            id: self.public_id,
            origin_lat: self.origin_lat,
            origin_lon: self.origin_lon,
            target_lat: self.target_lat,
            target_lon: self.target_lon,
            amount_cents: self.amount_cents,
            currency: &self.currency,
            capture_method: self.capture_method,
            status: self.status.as_str(),
            payment_intent_id: self.payment_intent_id.as_deref(),
            amount_authorized_cents: self.amount_authorized_cents,
            amount_captured_cents: self.amount_captured_cents,
            amount_refunded_cents: self.amount_refunded_cents,
            amount_capturable_max_cents: self.amount_capturable_max_cents,
            hold_expires_at: self.hold_expires_at,
            tip_cents: self.tip_cents,
            next_action,
            created_at: self.created_at,
            driver: self.driver.map(Into::into),
        }
    }

    /// The ride as `settlement` leaves it, for an answer stored in the
    /// statement that applies it.
    pub fn settled(&self, settlement: &Settlement) -> Ride {
        Ride {
            status: settlement.status,
            payment_intent_id: settlement.payment_intent_id.clone(),
            client_secret: settlement.client_secret.clone(),
            next_action: settlement.next_action.clone(),
            amount_authorized_cents: settlement.amount_authorized_cents,
            amount_captured_cents: settlement.amount_captured_cents,
            settling_key_id: settlement.settling_key_id,
            amount_capturable_max_cents: settlement.amount_capturable_max_cents,
            hold_expires_at: settlement.hold_expires_at,
            tip_cents: settlement.tip_cents,
            ..self.clone()
        }
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = rides)]
// NULL, not DEFAULT, for a `None`: one SQL text whatever the ride (db::cached).
#[diesel(treat_none_as_default_value = false)]
pub struct NewRide<'a> {
    pub public_id: RidePublicId,
    pub user_id: UserId,
    pub idempotency_key_id: KeyId,
    pub origin_lat: f64,
    pub origin_lon: f64,
    pub target_lat: f64,
    pub target_lon: f64,
    pub amount_cents: i64,
    pub currency: &'a str,
    pub payment_method: &'a str,
    pub capture_method: CaptureMethod,
    pub customer: Option<&'a str>,
    pub return_url: &'a str,
}

/// Inserts the ride with its audit record, in one statement; `None` if its
/// id is taken.
pub fn insert(conn: &mut PgConnection, ride: &NewRide<'_>) -> QueryResult<Option<Ride>> {
    let record = audit::of_changed(
        ride.user_id,
        "ride.created",
        "ride",
        json!({ "idempotency_key_id": ride.idempotency_key_id, "amount_cents": ride.amount_cents }),
    );
    recorded(
        diesel::insert_into(rides::table)
            .values(ride)
            .on_conflict(rides::public_id)
            .do_nothing()
            .returning(Ride::as_returning()),
    )
    .with(record)
    .cached_as(insert)
    .get_result(conn)
    .optional()
}

/// The ride created under an idempotency key row.
pub fn find_by_key(conn: &mut PgConnection, key_id: KeyId) -> QueryResult<Ride> {
    rides::table
        .filter(rides::idempotency_key_id.eq(key_id))
        .select(Ride::as_select())
        .first(conn)
}

/// What a PaymentIntent makes of a ride: its status, the intent, and what
/// it holds or took (`payment::settlement` says which). A settlement ends a
/// completion or cancellation in progress.
#[derive(Debug, Clone, PartialEq, AsChangeset)]
#[diesel(table_name = rides)]
// A `None` writes NULL: a ride leaving `requires_action` loses its next
// action, and a settled ride its settling key.
#[diesel(treat_none_as_null = true)]
pub struct Settlement {
    pub status: RideStatus,
    pub payment_intent_id: Option<String>,
    pub client_secret: Option<String>,
    pub next_action: Option<Value>,
    pub amount_authorized_cents: i64,
    pub amount_captured_cents: i64,
    pub settling_key_id: Option<KeyId>,
    /// What the hold lets be captured, and when it lapses: `None` for a
    /// ride not held.
    pub amount_capturable_max_cents: Option<i64>,
    pub hold_expires_at: Option<DateTime<Utc>>,
    /// The tip a held ride's completion captures, kept by it; any other
    /// end of the hold drops it.
    pub tip_cents: i64,
    /// The charge it captured, if any: recorded (and posted) with it.
    #[diesel(skip_update)]
    pub charge: ChargeRecord,
}

/// The ride `ride_id` while a settlement may apply to it: still in one of
/// `from`, and no key completing or cancelling it.
macro_rules! settleable {
    ($ride_id:expr, $from:expr) => {{
        // One array parameter (`= ANY($2)`) whatever the statuses: one SQL text.
        let from: Vec<&'static str> = $from.iter().map(|status| status.as_str()).collect();
        rides::table
            .filter(rides::id.eq($ride_id))
            .filter(rides::status.eq_any(from))
            .filter(rides::settling_key_id.is_null())
    }};
}

/// Applies `settlement` to the ride if it is still in one of `from`, the
/// statuses the new one may follow, and no key is completing or cancelling
/// it; `None` when it has moved on (or is being moved on).
pub fn settle(
    conn: &mut PgConnection,
    ride_id: RideId,
    from: &[RideStatus],
    settlement: &Settlement,
) -> QueryResult<Option<Ride>> {
    recorded(
        diesel::update(settleable!(ride_id, from))
            .set((settlement, rides::updated_at.eq(diesel::dsl::now)))
            .returning(Ride::as_returning()),
    )
    .with(settlement.charge.clone())
    .cached_as(settle)
    .get_result(conn)
    .optional()
}

/// `settle`'s change, for a key that finishes with it
/// (`idempotency::Finishing`): made only while the key's lease holds.
pub fn settle_finishing(
    ride_id: RideId,
    from: &[RideStatus],
    settlement: Settlement,
) -> Recorded<'static, impl QueryFragment<Pg> + Send> {
    let charge = settlement.charge.clone();
    recorded(
        diesel::update(settleable!(ride_id, from).filter(fenced()))
            .set((settlement, rides::updated_at.eq(diesel::dsl::now)))
            .returning(Ride::as_returning()),
    )
    .with(charge)
}
