//! A request's last atomic step and the key's final write as one
//! statement, with no transaction around it.
//!
//! A last step whose work is one change (a ride settled, with its audit
//! record, and its event staged by the database's trigger) and whose answer is known before the change is sent
//! needs no `BEGIN` and `COMMIT`: PostgreSQL runs one statement atomically.
//! The lease fences the change inside the statement:
//!
//! ```sql
//! WITH fence AS (SELECT id FROM idempotency_keys
//!                WHERE <the lease's id, epoch and point> FOR UPDATE),
//!      changed AS (<the change> WHERE ... AND EXISTS (SELECT 1 FROM fence)),
//!      record_0 AS (<its records>),
//!      finished AS (UPDATE idempotency_keys SET <finished, with the answer>
//!                   WHERE ... AND EXISTS (SELECT 1 FROM changed))
//! SELECT count(*) FROM changed
//! ```
//!
//! The fence locks the key row, so a takeover waits for the statement, or
//! the statement for the takeover, and then finds the epoch moved and
//! changes nothing. The key finishes only with the change, and the change
//! is made only under the lease: both or neither.

use diesel::expression::SqlLiteral;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::{BigInt, Bool};
use diesel::{QueryResult, RunQueryDsl};

use super::key_row::StoredResponse;
use crate::db::ChangeCtes;

const FENCED: &str = "EXISTS (SELECT 1 FROM fence)";

/// The condition a finishing change must filter on: the key's lease holds.
pub fn fenced() -> SqlLiteral<Bool> {
    diesel::dsl::sql(FENCED)
}

/// The condition of the key's final write: the change was made.
pub(super) fn changed() -> SqlLiteral<Bool> {
    diesel::dsl::sql("EXISTS (SELECT 1 FROM changed)")
}

/// A last atomic step as one change (a `db::recorded` change that filters
/// on [`fenced`]) and the answer it finishes the key with.
pub struct Finishing {
    changes: Box<dyn ChangeCtes>,
    pub(super) response: StoredResponse,
}

impl Finishing {
    pub fn new(changes: impl ChangeCtes + 'static, response: StoredResponse) -> Self {
        #[cfg(debug_assertions)]
        assert!(
            crate::db::ctes_text(&changes).contains(FENCED),
            "a finishing change must filter on idempotency::finishing::fenced()"
        );
        Finishing {
            changes: Box::new(changes),
            response,
        }
    }
}

/// The statement: the lease's fence, the change and its records, and the
/// key's final write. Loads how many rows changed (0: the lease was lost, or
/// the row moved on, and nothing was written).
pub(super) struct FinishingStatement<'a, F, U> {
    pub fence: F,
    pub finishing: &'a Finishing,
    pub finished: U,
}

impl<F: QueryFragment<Pg>, U: QueryFragment<Pg>> QueryFragment<Pg>
    for FinishingStatement<'_, F, U>
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("WITH fence AS (");
        self.fence.walk_ast(out.reborrow())?;
        out.push_sql("), ");
        self.finishing.changes.walk_ctes(out.reborrow())?;
        out.push_sql(", finished AS (");
        self.finished.walk_ast(out.reborrow())?;
        out.push_sql(") SELECT count(*) FROM changed");
        Ok(())
    }

    // Diesel keeps no statement holding raw SQL (the fence's conditions)
    // prepared, in case its text varies. This one's text is fixed by the
    // endpoint's change, and Diesel keys it by that text.
    fn is_safe_to_cache_prepared(&self, _backend: &Pg) -> QueryResult<bool> {
        Ok(true)
    }
}

/// Keyed by its SQL text: the change is the endpoint's.
impl<F, U> QueryId for FinishingStatement<'_, F, U> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<F, U> Query for FinishingStatement<'_, F, U> {
    type SqlType = BigInt;
}

impl<F, U, Conn> RunQueryDsl<Conn> for FinishingStatement<'_, F, U> {}
