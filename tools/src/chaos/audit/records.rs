//! What the audit reads: the keys, rides and PaymentIntents of a run, and
//! the gateway's own records, indexed the ways the checks look them up.

use std::collections::{HashMap, HashSet};

use diesel::sql_types::{Array, BigInt, Bytea, Nullable, SmallInt, Text};
use diesel::{PgConnection, QueryableByName, RunQueryDsl};
use ridepay::public_ids::RidePublicId;

#[derive(QueryableByName)]
pub(crate) struct KeyRow {
    #[diesel(sql_type = BigInt)]
    pub(crate) id: i64,
    #[diesel(sql_type = Text)]
    pub(crate) key: String,
    #[diesel(sql_type = Text)]
    pub(crate) recovery_point: String,
    #[diesel(sql_type = Nullable<SmallInt>)]
    pub(crate) response_status: Option<i16>,
    #[diesel(sql_type = Nullable<Bytea>)]
    pub(crate) response_body: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) last_error: Option<String>,
}

/// A ride: `id` the row's key inside the database (refunds and audit
/// records name it), `public_id` the id the API gave its clients.
#[derive(QueryableByName)]
pub(crate) struct RideRow {
    #[diesel(sql_type = BigInt)]
    pub(crate) id: i64,
    #[diesel(sql_type = Bytea)]
    pub(crate) public_id: RidePublicId,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub(crate) idempotency_key_id: Option<i64>,
    #[diesel(sql_type = BigInt)]
    pub(crate) amount_cents: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) amount_authorized_cents: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) amount_captured_cents: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) amount_refunded_cents: i64,
    #[diesel(sql_type = Text)]
    pub(crate) status: String,
    #[diesel(sql_type = Text)]
    pub(crate) capture_method: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) payment_intent_id: Option<String>,
    /// The key completing or cancelling the ride, while one does.
    #[diesel(sql_type = Nullable<BigInt>)]
    pub(crate) settling_key_id: Option<i64>,
    #[diesel(sql_type = BigInt)]
    pub(crate) tip_cents: i64,
    /// The tip's own PaymentIntent, for a tip after the capture.
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) tip_payment_intent_id: Option<String>,
}

impl RideRow {
    /// What the fare's PaymentIntent took: what was captured, less a tip
    /// paid by a PaymentIntent of its own.
    pub(crate) fn fare_captured_cents(&self) -> i64 {
        match self.tip_payment_intent_id {
            Some(_) => self.amount_captured_cents - self.tip_cents,
            None => self.amount_captured_cents,
        }
    }

    /// Money was taken: the fare, or a cancellation fee.
    pub(crate) fn paid(&self) -> bool {
        matches!(self.status.as_str(), "captured" | "refunded")
            || (self.status == "canceled" && self.amount_captured_cents > 0)
    }
}

/// A PaymentIntent as the gateway holds it, with the request ridepay named
/// in its metadata (`ridepay_key`: one per client key and request).
#[derive(QueryableByName)]
pub(crate) struct IntentRow {
    #[diesel(sql_type = Text)]
    pub(crate) id: String,
    /// What is authorized, after any raise of the hold.
    #[diesel(sql_type = BigInt)]
    pub(crate) amount_cents: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) amount_capturable_cents: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) amount_received_cents: i64,
    #[diesel(sql_type = Text)]
    pub(crate) status: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) ridepay_key: Option<String>,
    /// What the hold let be captured, when its card allowed overcapture.
    #[diesel(sql_type = Nullable<BigInt>)]
    pub(crate) overcapture_max_cents: Option<i64>,
}

impl IntentRow {
    /// The most it may have taken: the hold, or the overcapture room.
    pub(crate) fn capturable_at_most(&self) -> i64 {
        self.overcapture_max_cents.unwrap_or(self.amount_cents)
    }
}

pub(crate) const SUCCEEDED: &str = "succeeded";
/// The statuses of refunds that no longer count, for SQL: failed or
/// cancelled.
pub(crate) const UNDONE_REFUNDS: &str = "('failed', 'canceled')";
/// Where a declined PaymentIntent stays.
pub(crate) const DECLINED: &str = "requires_payment_method";

#[derive(QueryableByName)]
pub(crate) struct Count {
    #[diesel(sql_type = BigInt)]
    pub(crate) count: i64,
}

/// The names of the checks, in the order the summary lists them.
/// The gateway's own records: the database it keeps them in, and the name
/// its rows carry (`simulated` or `fake`).
pub struct GatewayRecords {
    pub conn: PgConnection,
    pub gateway: &'static str,
}

/// PaymentIntents reconciliation released.
#[derive(QueryableByName)]
pub(crate) struct Released {
    #[diesel(sql_type = Text)]
    pub(crate) payment_intent_id: String,
}

/// Webhook deliveries with attempts left, for waiting on the sender.
pub fn pending_deliveries(conn: &mut PgConnection) -> anyhow::Result<i64> {
    Ok(diesel::sql_query(
        "SELECT count(*) AS count FROM webhook_deliveries WHERE status = 'pending'",
    )
    .get_result::<Count>(conn)?
    .count)
}

/// Keys of `users` not yet finished, for waiting on the completer.
pub fn unfinished_keys(conn: &mut PgConnection, users: &[i64]) -> anyhow::Result<i64> {
    Ok(diesel::sql_query(
        "SELECT count(*) AS count FROM idempotency_keys \
         WHERE user_id = ANY($1) AND recovery_point <> 'finished'",
    )
    .bind::<Array<BigInt>, _>(users)
    .get_result::<Count>(conn)?
    .count)
}

/// Drivers' pay not settled yet, for waiting on the transfer worker:
/// transfers and reversals owed and not made, and transfers refused or not
/// sent to a driver who is active now.
pub fn pay_unsettled(conn: &mut PgConnection) -> anyhow::Result<i64> {
    Ok(diesel::sql_query(
        "SELECT (SELECT count(*) FROM transfers WHERE status = 'pending') \
         + (SELECT count(*) FROM transfer_reversals WHERE status = 'pending') \
         + (SELECT count(*) FROM transfers t JOIN drivers d ON d.id = t.driver_id \
            WHERE t.status = 'failed' AND d.status = 'active') AS count",
    )
    .get_result::<Count>(conn)?
    .count)
}

/// What the audit reads, indexed the ways the checks look it up.
pub(crate) struct Records {
    pub(crate) keys: Vec<KeyRow>,
    pub(crate) rides: Vec<RideRow>,
    pub(crate) intents: Vec<IntentRow>,
    /// The gateway's capture calls, and its refunds that are not undone,
    /// per PaymentIntent.
    pub(crate) captures: Vec<IntentTotal>,
    pub(crate) gateway_refunds: Vec<IntentTotal>,
    /// ridepay's refunds that are not undone, per ride.
    pub(crate) refunds: Vec<RideTotal>,
    /// Audit records about rides, per ride and action.
    pub(crate) ride_records: Vec<ActionCount>,
    /// PaymentIntents no ride recorded, which reconciliation released
    /// (cancelled or refunded).
    pub(crate) released: HashSet<String>,
}

impl Records {
    pub(crate) fn key_by_id(&self) -> HashMap<i64, &KeyRow> {
        self.keys.iter().map(|k| (k.id, k)).collect()
    }

    pub(crate) fn key_by_name(&self) -> HashMap<&str, &KeyRow> {
        self.keys.iter().map(|k| (k.key.as_str(), k)).collect()
    }

    /// By the id as the API spells it (`ride_...`), which is how clients
    /// name a ride: what an answer said is looked up as it was said.
    pub(crate) fn ride_by_public_id(&self) -> HashMap<String, &RideRow> {
        self.rides
            .iter()
            .map(|r| (r.public_id.to_string(), r))
            .collect()
    }

    /// How a message names the ride of row `id` (refunds and audit records
    /// name rides by row): by its public id, or by the row if no ride of
    /// the user's has it.
    pub(crate) fn ride_named(&self, id: i64) -> String {
        self.rides
            .iter()
            .find(|r| r.id == id)
            .map_or_else(|| format!("row {id}"), |r| r.public_id.to_string())
    }

    pub(crate) fn ride_by_key(&self) -> HashMap<i64, &RideRow> {
        self.rides
            .iter()
            .filter_map(|r| Some((r.idempotency_key_id?, r)))
            .collect()
    }

    pub(crate) fn intent_by_id(&self) -> HashMap<&str, &IntentRow> {
        self.intents.iter().map(|i| (i.id.as_str(), i)).collect()
    }

    pub(crate) fn index(&self) -> Index<'_> {
        Index {
            key_by_name: self.key_by_name(),
            ride_by_public_id: self.ride_by_public_id(),
            ride_by_key: self.ride_by_key(),
            intent_by_id: self.intent_by_id(),
        }
    }

    pub(crate) fn rides_naming(&self) -> HashMap<&str, Vec<&RideRow>> {
        let mut naming: HashMap<&str, Vec<&RideRow>> = HashMap::new();
        for ride in &self.rides {
            for intent in [&ride.payment_intent_id, &ride.tip_payment_intent_id]
                .into_iter()
                .flatten()
            {
                naming.entry(intent.as_str()).or_default().push(ride);
            }
        }
        naming
    }
}

/// The lookups the checks of clients' keys make, built once.
pub(crate) struct Index<'a> {
    pub(crate) key_by_name: HashMap<&'a str, &'a KeyRow>,
    pub(crate) ride_by_public_id: HashMap<String, &'a RideRow>,
    pub(crate) ride_by_key: HashMap<i64, &'a RideRow>,
    pub(crate) intent_by_id: HashMap<&'a str, &'a IntentRow>,
}

impl<'a> Index<'a> {
    pub(crate) fn intent_of(&self, ride: &RideRow) -> Option<&'a IntentRow> {
        self.intent_by_id
            .get(ride.payment_intent_id.as_deref()?)
            .copied()
    }
}

/// A count and a sum of cents, per PaymentIntent.
#[derive(QueryableByName)]
pub(crate) struct IntentTotal {
    #[diesel(sql_type = Text)]
    pub(crate) intent_id: String,
    #[diesel(sql_type = BigInt)]
    pub(crate) count: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) cents: i64,
}

/// A sum of cents, per ride (its row).
#[derive(QueryableByName)]
pub(crate) struct RideTotal {
    #[diesel(sql_type = BigInt)]
    pub(crate) ride_id: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) cents: i64,
}

/// How many audit records of an action a ride (its row) has.
#[derive(QueryableByName)]
pub(crate) struct ActionCount {
    #[diesel(sql_type = BigInt)]
    pub(crate) ride_id: i64,
    #[diesel(sql_type = Text)]
    pub(crate) action: String,
    #[diesel(sql_type = BigInt)]
    pub(crate) count: i64,
}
