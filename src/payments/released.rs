//! Payments at the gateway that no ride records, released by
//! reconciliation (a hold cancelled, a capture refunded), and the
//! tombstone each leaves under its `ridepay_key` before it is released: a
//! request of that key that meets the payment afterwards (its create
//! answered again from what the gateway saved) ends with a stored 502
//! rather than record a payment given back.
//!
//! Whether a key's payment is released is decided under a transaction
//! lock on the key's hash, which reconciliation holds while it checks that
//! no one works on the key and writes the tombstone, and a request holds
//! while it checks the tombstone and records the payment: one of them goes
//! first, and the other sees what it did.

use diesel::prelude::*;
use diesel::sql_types::Text;

use crate::idempotency::GatewayCalls;
use crate::schema::released_payments;
use ridepay_gateway::{GatewayError, PaymentGateway, PaymentIntent};

/// Takes the transaction lock of `ridepay_key`'s release decision, until
/// the caller's transaction ends.
pub fn lock(conn: &mut PgConnection, ridepay_key: &str) -> QueryResult<()> {
    diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 7)) IS NULL")
        .bind::<Text, _>(ridepay_key)
        .execute(conn)?;
    Ok(())
}

/// Whether the payment of `ridepay_key` was released (or is being). Read
/// under [`lock`], in a statement after it.
pub fn is_released(conn: &mut PgConnection, ridepay_key: &str) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        released_payments::table.find(ridepay_key),
    ))
    .get_result(conn)
}

/// A payment to release, as its tombstone records it.
#[derive(Debug, Clone, PartialEq, Eq, Insertable, Queryable, Selectable)]
#[diesel(table_name = released_payments, check_for_backend(diesel::pg::Pg))]
pub struct Release {
    pub ridepay_key: String,
    pub payment_intent_id: String,
    /// `cancel` (a hold) or `refund` (a capture).
    pub action: String,
    pub amount_cents: i64,
    pub currency: String,
}

/// Writes the tombstone, under [`lock`]; false when there is one already.
pub fn tombstone(conn: &mut PgConnection, release: &Release) -> QueryResult<bool> {
    Ok(diesel::insert_into(released_payments::table)
        .values(release)
        .on_conflict_do_nothing()
        .execute(conn)?
        == 1)
}

/// Tombstones whose release the gateway has not confirmed yet: a pass
/// that stopped between the two sends them again, under the same keys.
pub fn unconfirmed(conn: &mut PgConnection) -> QueryResult<Vec<Release>> {
    released_payments::table
        .filter(released_payments::released_at.is_null())
        .select(Release::as_select())
        .load(conn)
}

/// What a refunded payment moved, as the gateway tells it after the
/// release: its charge and what it captured, the gateway's fee on it, and
/// the refund that gave it back. Recorded with the release, which posts
/// them to the ledger against `platform:suspense`.
#[derive(Debug, Default, Clone, PartialEq, Eq, AsChangeset)]
#[diesel(table_name = released_payments)]
pub struct Moved {
    pub charge_id: Option<String>,
    pub captured_cents: Option<i64>,
    pub balance_transaction_id: Option<String>,
    pub fee_cents: Option<i64>,
    pub refund_id: Option<String>,
}

impl Moved {
    /// What `intent`, as read after its release, moved, and the release's
    /// refund.
    pub fn of(intent: &PaymentIntent, refund_id: String) -> Moved {
        let charge = intent.captured_charge();
        let txn = intent.settled_in_own_currency();
        Moved {
            charge_id: charge.map(str::to_owned),
            captured_cents: charge.map(|_| intent.amount_received_cents),
            balance_transaction_id: txn.map(|txn| txn.id.clone()),
            fee_cents: txn.map(|txn| txn.fee_cents),
            refund_id: Some(refund_id),
        }
    }
}

/// Records that the gateway released it, with what it moved (nothing, for
/// a hold cancelled).
pub fn confirmed(conn: &mut PgConnection, ridepay_key: &str, moved: &Moved) -> QueryResult<()> {
    diesel::update(released_payments::table.find(ridepay_key))
        .set((
            released_payments::released_at.eq(crate::db::database_now().nullable()),
            moved,
        ))
        .execute(conn)?;
    Ok(())
}

/// Whether reconciliation released the payment of a key whose calls are
/// `calls`, decided under the lock it decides under.
pub fn of_calls(conn: &mut PgConnection, calls: GatewayCalls) -> QueryResult<bool> {
    let ridepay_key = calls.from.to_hex();
    lock(conn, &ridepay_key)?;
    is_released(conn, &ridepay_key)
}

/// A create answered again from what the gateway saved under its key is of
/// the PaymentIntent as it was then: read again, as it is now (a hold since
/// cancelled by reconciliation is then a rejection). Still marked replayed,
/// so that recording it checks for its tombstone.
pub fn reread(
    gateway: &dyn PaymentGateway,
    intent: PaymentIntent,
) -> Result<PaymentIntent, GatewayError> {
    Ok(match gateway.retrieve_intent(&intent.id)? {
        Some(now) => PaymentIntent {
            replayed: true,
            ..now
        },
        None => intent,
    })
}
