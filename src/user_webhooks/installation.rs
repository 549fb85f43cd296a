//! The installation's own destination: receipts (`ride.captured`,
//! `ride.canceled`, `ride.tipped` of every user's rides) to the operator's
//! `RECEIPT_WEBHOOK_URL`, signed with `RECEIPT_WEBHOOK_SECRET`. Its row
//! (id 0, the one without a user) is made by the migration that turned
//! receipts into events; every start-up gives it the settings, so the last instance
//! started decides (all of them are to be given the same).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use secrecy::ExposeSecret;

use crate::config::ReceiptDestination;
use crate::schema::webhook_endpoints as e;

/// Why the installation's destination is disabled when no URL is set.
const NOT_SET: &str = "RECEIPT_WEBHOOK_URL is not set";

/// The installation's destination as `receipts` says: sending to its URL
/// and signing with its secret, enabled (again, after a 410 or days of
/// failures: a restart is the operator's re-enable); or, with no URL,
/// disabled, its deliveries kept until one is set.
pub fn configure(
    conn: &mut PgConnection,
    receipts: Option<&ReceiptDestination>,
) -> QueryResult<()> {
    let installation = e::table.filter(e::user_id.is_null());
    match receipts {
        Some(receipts) => diesel::update(installation)
            .set((
                e::url.eq(&receipts.url),
                e::secret.eq(receipts.secret.expose_secret()),
                e::previous_secret.eq(None::<String>),
                e::status.eq("enabled"),
                e::disabled_reason.eq(None::<String>),
                e::failing_since.eq(None::<DateTime<Utc>>),
                e::updated_at.eq(diesel::dsl::now),
            ))
            .execute(conn)?,
        None => diesel::update(installation.filter(e::status.eq("enabled")))
            .set((
                e::status.eq("disabled"),
                e::disabled_reason.eq(NOT_SET),
                e::updated_at.eq(diesel::dsl::now),
            ))
            .execute(conn)?,
    };
    Ok(())
}
