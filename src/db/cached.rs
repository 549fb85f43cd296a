//! Keeping the request path's statements prepared.
//!
//! Diesel prepares every statement, but keeps a prepared statement for reuse
//! only when it can prove the query has a bounded number of SQL shapes. It
//! never keeps an UPDATE (a changeset of optional fields has many shapes) nor
//! an INSERT of a struct with optional fields, so PostgreSQL parses and plans
//! those again at every execution. The ones the request path runs have one
//! shape each (or two, NULL or not). `Cached` keeps them prepared, keyed by
//! their SQL text and bind types, so a different shape is a different cache
//! entry and never runs a plan made for another.
//!
//! Load a cached statement (`get_result`, `load`), do not `execute` it:
//! `execute` borrows the statement, and Diesel asks a borrowed statement's
//! parts, not the statement, whether it may be kept. A fenced UPDATE returns
//! the key's id for that reason.

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::{QueryResult, RunQueryDsl};

/// A statement Diesel would re-prepare at every execution, kept prepared.
#[derive(Debug, Clone, Copy)]
pub struct Cached<Q>(Q);

/// `.cached()` on a statement whose SQL shapes are few and fixed.
pub trait CacheStatement: QueryFragment<Pg> + Sized {
    fn cached(self) -> Cached<Self> {
        Cached(self)
    }
}

impl<Q: QueryFragment<Pg>> CacheStatement for Q {}

impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for Cached<Q> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    // Part of Diesel's interface for backend implementors: the cache asks
    // the statement as a whole, so this answer overrides the parts'.
    fn is_safe_to_cache_prepared(&self, _backend: &Pg) -> QueryResult<bool> {
        Ok(true)
    }
}

/// No static id: the cache is keyed by the SQL text, never by the type alone.
impl<Q> QueryId for Cached<Q> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: Query> Query for Cached<Q> {
    type SqlType = Q::SqlType;
}

impl<Q, Conn> RunQueryDsl<Conn> for Cached<Q> {}
