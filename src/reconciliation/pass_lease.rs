//! One reconciliation pass at a time across instances: a lease on the
//! `reconciliation` row (not a session advisory lock, which a transaction
//! pooler would break), held for a bounded time and renewed as the pass
//! goes; and the cursor of the orphan listing it keeps.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use uuid::Uuid;

use crate::db;
use crate::schema::reconciliation::dsl as row;

/// The lease of one pass, held for `ttl` at a time (the key lease's
/// timeout, `IDEMPOTENCY_LEASE_SECS`) and renewed between keys and pages: a
/// pass that died frees it that soon.
#[derive(Debug)]
pub struct PassLease {
    holder: Uuid,
    ttl: Duration,
    /// Where the last pass left the orphan listing.
    pub listed_before: Option<DateTime<Utc>>,
}

impl PassLease {
    /// The lease, unless another pass holds it.
    pub fn take(conn: &mut PgConnection, ttl: Duration) -> QueryResult<Option<PassLease>> {
        let holder = Uuid::new_v4();
        let now = db::now(conn)?;
        let taken = diesel::update(
            row::reconciliation.filter(row::held_until.is_null().or(row::held_until.lt(now))),
        )
        .set((
            row::holder.eq(holder),
            row::held_until.eq(now + db::span(ttl)),
        ))
        .returning(row::listed_before)
        .get_result::<Option<DateTime<Utc>>>(conn)
        .optional()?;
        Ok(taken.map(|listed_before| PassLease {
            holder,
            ttl,
            listed_before,
        }))
    }

    /// Holds the lease for another `ttl`; false when it was lost (the pass
    /// took longer than that between renewals) and the pass must stop.
    pub fn renew(&self, conn: &mut PgConnection) -> QueryResult<bool> {
        let until = db::now(conn)? + db::span(self.ttl);
        let renewed = diesel::update(row::reconciliation.filter(row::holder.eq(self.holder)))
            .set(row::held_until.eq(until))
            .execute(conn)?;
        Ok(renewed == 1)
    }

    /// Gives the lease up, with where the orphan listing got to.
    pub fn release(
        self,
        conn: &mut PgConnection,
        listed_before: Option<DateTime<Utc>>,
    ) -> QueryResult<()> {
        diesel::update(row::reconciliation.filter(row::holder.eq(self.holder)))
            .set((
                row::holder.eq(None::<Uuid>),
                row::held_until.eq(None::<DateTime<Utc>>),
                row::listed_before.eq(listed_before.or(self.listed_before)),
            ))
            .execute(conn)?;
        Ok(())
    }
}
