//! Keeping the request path's statements prepared, and finding them again
//! without rebuilding their SQL.
//!
//! Diesel prepares every statement, but keeps a prepared statement for reuse
//! only when it can prove the query has one SQL shape. It never keeps an
//! UPDATE (a changeset of optional fields has many shapes) nor an INSERT of a
//! struct with optional fields, so PostgreSQL would parse and plan those
//! again at every execution. And a statement it cannot key by its type, it
//! keys by its SQL text, which it builds and hashes at every execution:
//! under callgrind, about a quarter of a new ride's instructions in the
//! server.
//!
//! `.cached_as(site)` keeps a statement prepared, keyed by `site`: the
//! function that sends it, whose function item is a type of its own. So:
//! - one cached statement per function;
//! - its SQL text must not depend on the values bound: no `eq_any` over a
//!   list, and an `Insertable` with optional fields derives
//!   `treat_none_as_default_value = false`, so that `None` binds NULL
//!   instead of writing DEFAULT.
//!
//! Debug builds check both at every execution (the test suite runs every
//! cached statement), since breaking either would run one statement's plan
//! with another's parameters.
//!
//! Load a cached statement (`get_result`, `load`), do not `execute` it:
//! `execute` borrows the statement, and Diesel asks a borrowed statement's
//! parts, not the statement, whether it may be kept. A fenced UPDATE returns
//! the key's id for that reason.

use std::marker::PhantomData;

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::{QueryResult, RunQueryDsl};

/// A statement kept prepared, keyed by the function that sends it.
pub struct Cached<Q, Site> {
    statement: Q,
    site: PhantomData<Site>,
}

/// `.cached_as(site)` on a statement whose SQL text is the same at every
/// execution from `site`.
pub trait CacheStatement: QueryFragment<Pg> + Sized {
    fn cached_as<Site: 'static>(self, _site: Site) -> Cached<Self, Site> {
        #[cfg(debug_assertions)]
        one_shape_per_site::check::<Site>(&self);
        Cached {
            statement: self,
            site: PhantomData,
        }
    }
}

impl<Q: QueryFragment<Pg>> CacheStatement for Q {}

impl<Q: QueryFragment<Pg>, Site> QueryFragment<Pg> for Cached<Q, Site> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.statement.walk_ast(pass)
    }

    // Part of Diesel's interface for backend implementors: the cache asks
    // the statement as a whole, so this answer overrides the parts'.
    fn is_safe_to_cache_prepared(&self, _backend: &Pg) -> QueryResult<bool> {
        Ok(true)
    }
}

/// The cache key is the site's type.
impl<Q, Site: 'static> QueryId for Cached<Q, Site> {
    type QueryId = Site;
    const HAS_STATIC_QUERY_ID: bool = true;
}

impl<Q: Query, Site> Query for Cached<Q, Site> {
    type SqlType = Q::SqlType;
}

impl<Q, Site, Conn> RunQueryDsl<Conn> for Cached<Q, Site> {}

/// The SQL text `statement` sends, for the checks debug builds make.
#[cfg(debug_assertions)]
pub fn sql_text(statement: &impl QueryFragment<Pg>) -> String {
    use diesel::query_builder::QueryBuilder;
    let mut builder = diesel::pg::PgQueryBuilder::default();
    statement
        .to_sql(&mut builder, &Pg)
        .expect("a statement renders its SQL");
    builder.finish()
}

#[cfg(debug_assertions)]
mod one_shape_per_site {
    use std::any::{type_name, TypeId};
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex, PoisonError};

    use diesel::pg::Pg;
    use diesel::query_builder::QueryFragment;

    static SQL_BY_SITE: LazyLock<Mutex<HashMap<TypeId, String>>> = LazyLock::new(Mutex::default);

    /// Panics if `site` sent another SQL text before.
    pub(super) fn check<Site: 'static>(statement: &impl QueryFragment<Pg>) {
        let sql = super::sql_text(statement);
        let mut known = SQL_BY_SITE.lock().unwrap_or_else(PoisonError::into_inner);
        let first = known
            .entry(TypeId::of::<Site>())
            .or_insert_with(|| sql.clone());
        assert_eq!(
            *first,
            sql,
            "{} sent two different SQL texts as one cached statement",
            type_name::<Site>()
        );
    }
}

#[cfg(test)]
mod tests {
    use diesel::prelude::*;

    use super::CacheStatement;

    diesel::table! {
        rides (id) {
            id -> Int8,
            user_id -> Int8,
        }
    }

    fn two_statements() {
        let _ = rides::table
            .find(1)
            .select(rides::id)
            .cached_as(two_statements);
        let _ = rides::table
            .find(1)
            .select(rides::user_id)
            .cached_as(two_statements);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "two different SQL texts")]
    fn a_site_that_sends_two_statements_is_caught() {
        two_statements();
    }

    fn one_statement(id: i64) {
        let _ = rides::table
            .find(id)
            .select(rides::id)
            .cached_as(one_statement);
    }

    #[test]
    fn a_site_may_send_its_statement_with_any_values() {
        one_statement(1);
        one_statement(2);
    }
}
