//! A change to one row and the rows that record it (its audit record),
//! sent to PostgreSQL as one statement.
//!
//! Each would otherwise be a round trip of its own inside the transaction.
//! PostgreSQL runs data-modifying CTEs as one statement, and an INSERT that
//! selects from the change's RETURNING output writes a record only for a
//! row that changed. Diesel's DSL has no CTEs, so this renders the `WITH`
//! itself; the change and the records bind every value as a parameter.
//!
//! ```sql
//! WITH changed AS (<the change, RETURNING its row>),
//!      record_0 AS (INSERT INTO ... SELECT ... FROM changed)
//! SELECT * FROM changed
//! ```

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::{QueryResult, RunQueryDsl};

/// A record of the change: an `INSERT ... SELECT ... FROM changed`, where
/// `changed` is the changed row as its RETURNING clause gives it.
pub type Record<'a> = Box<dyn QueryFragment<Pg> + Send + 'a>;

/// `change` (an INSERT or UPDATE with a RETURNING clause) and its records.
/// It loads what `change` returns.
pub struct Recorded<'a, S> {
    change: S,
    records: Vec<Record<'a>>,
}

/// Starts a change to be sent with its records.
pub fn recorded<'a, S: QueryFragment<Pg>>(change: S) -> Recorded<'a, S> {
    Recorded {
        change,
        records: Vec::new(),
    }
}

/// The records' CTE names: fixed text, so no walk of the statement (Diesel
/// walks it several times per execution) builds a string.
const RECORD_NAMES: [&str; 4] = [
    ", record_0 AS (",
    ", record_1 AS (",
    ", record_2 AS (",
    ", record_3 AS (",
];

impl<'a, S> Recorded<'a, S> {
    /// Adds a record, written for the changed row (none if no row changed).
    pub fn with(mut self, record: impl QueryFragment<Pg> + Send + 'a) -> Self {
        assert!(
            self.records.len() < RECORD_NAMES.len(),
            "a change takes at most {} records",
            RECORD_NAMES.len()
        );
        self.records.push(Box::new(record));
        self
    }
}

/// The change and its records as the CTEs of a statement that says what
/// else it does (`changed AS (...), record_0 AS (...)`): the key's final
/// write joins them there (`idempotency::Finishing`).
pub trait ChangeCtes: Send {
    fn walk_ctes<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()>;
}

impl<S: QueryFragment<Pg> + Send> ChangeCtes for Recorded<'_, S> {
    fn walk_ctes<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("changed AS (");
        self.change.walk_ast(out.reborrow())?;
        out.push_sql(")");
        for (name, record) in RECORD_NAMES.iter().zip(&self.records) {
            out.push_sql(name);
            record.walk_ast(out.reborrow())?;
            out.push_sql(")");
        }
        Ok(())
    }
}

impl<S: QueryFragment<Pg> + Send> QueryFragment<Pg> for Recorded<'_, S> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("WITH ");
        self.walk_ctes(out.reborrow())?;
        out.push_sql(" SELECT * FROM changed");
        Ok(())
    }
}

/// Keyed by its SQL text unless sent `.cached_as(site)`.
impl<S> QueryId for Recorded<'_, S> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<S: Query> Query for Recorded<'_, S> {
    type SqlType = S::SqlType;
}

impl<S, Conn> RunQueryDsl<Conn> for Recorded<'_, S> {}
