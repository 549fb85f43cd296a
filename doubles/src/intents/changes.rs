//! Changing a stored intent: what it becomes, judged on the version read
//! and written only if no one changed it meanwhile (else judged again).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde_json::Value;

use super::errors::{contended, storage};
use super::kept_calls::Call;
use super::one_statement;
use super::stored::{read_locked, Found, StoredIntent};
use ridepay_gateway::{GatewayError, IntentStatus};

/// How many times a call judges an intent again when another call changed
/// it first: each time, that other call made its change.
pub(crate) const ATTEMPTS: usize = 8;

/// An intent as it is to become from the version read, and the statuses it
/// went through on the way, each announced by its event.
pub(crate) struct Change {
    pub(crate) version: DateTime<Utc>,
    pub(crate) intent: StoredIntent,
    pub(crate) went_through: Vec<IntentStatus>,
}

impl Change {
    pub(crate) fn becomes(&mut self, intent: StoredIntent) {
        self.went_through.push(intent.status);
        self.intent = intent;
    }

    /// Writes the change, its events and `kept` (a call's answer, kept with
    /// its key) in one statement, guarded by the version read: false when
    /// the intent changed meanwhile or another call answered under the key
    /// first, and nothing was written. Where nothing changed, only `kept` is
    /// written.
    pub(crate) fn write(
        &self,
        conn: &mut PgConnection,
        kept: Option<(&Call, &Value)>,
    ) -> QueryResult<bool> {
        if !self.went_through.is_empty() {
            return one_statement::change(
                conn,
                &self.intent,
                self.version,
                &self.went_through,
                kept,
            );
        }
        match kept {
            Some((call, answer)) => call.keep(conn, answer),
            None => Ok(true),
        }
    }
}

/// The intent `id` as the doubles' clock has it now, and as `act` changes it
/// (or leaves it): what changed is written with its events, guarded by the
/// version read, so that a concurrent change makes `act` judge again.
pub(crate) fn read_and_change(
    conn: &mut PgConnection,
    id: &str,
    read: fn(&mut PgConnection, &str) -> QueryResult<Option<Found>>,
    act: impl Fn(&mut Change),
) -> Result<Option<StoredIntent>, GatewayError> {
    for _ in 0..ATTEMPTS {
        let Some(found) = read(conn, id).map_err(storage)? else {
            return Ok(None);
        };
        let mut change = found.on_the_clock();
        act(&mut change);
        if change.write(conn, None).map_err(storage)? {
            return Ok(Some(change.intent));
        }
    }
    Err(contended(id))
}

/// The intent `id` now, locked until the caller's transaction ends.
pub(crate) fn locked(
    conn: &mut PgConnection,
    id: &str,
) -> Result<Option<StoredIntent>, GatewayError> {
    read_and_change(conn, id, read_locked, |_| ())
}
