//! Where a page of a list starts, in Stripe's words: newest first,
//! `starting_after` the last row of the page before, or `ending_before` the
//! first row of the page after.

use crate::service_error::ServiceError;
use crate::validation::FieldError;

/// `$query` (boxed) narrowed to the page `$cursor` starts, its rows in
/// `$column`'s order: newest first, but for `ending_before` oldest first
/// from the cursor (`Cursor::page` turns them round).
macro_rules! from_cursor {
    ($query:expr, $column:expr, $cursor:expr) => {
        match $cursor {
            $crate::pages::Cursor::Newest => $query.order($column.desc()),
            $crate::pages::Cursor::After(row) => {
                $query.filter($column.lt(row)).order($column.desc())
            }
            $crate::pages::Cursor::Before(row) => {
                $query.filter($column.gt(row)).order($column.asc())
            }
        }
    };
}
pub(crate) use from_cursor;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cursor<T> {
    /// The newest rows.
    Newest,
    /// Rows older than this one (`starting_after`).
    After(T),
    /// Rows newer than this one (`ending_before`); the page is still
    /// newest first.
    Before(T),
}

impl<T> Cursor<T> {
    /// The cursor on the row `find` finds for the one named (an integer key
    /// for a public id, say); a 400 naming the parameter when it finds none
    /// of the caller's.
    pub fn resolve<U>(
        self,
        what: &str,
        find: impl FnOnce(T) -> Result<Option<U>, ServiceError>,
    ) -> Result<Cursor<U>, ServiceError> {
        let missing = |field: &str| {
            ServiceError::Invalid(vec![FieldError::new(
                field,
                format!("names no {what} of yours"),
            )])
        };
        Ok(match self {
            Cursor::Newest => Cursor::Newest,
            Cursor::After(row) => {
                Cursor::After(find(row)?.ok_or_else(|| missing("starting_after"))?)
            }
            Cursor::Before(row) => {
                Cursor::Before(find(row)?.ok_or_else(|| missing("ending_before"))?)
            }
        })
    }

    /// Up to `limit + 1` rows as the query read them (newest first, or for
    /// `ending_before` oldest first from the cursor) as a page of `limit`,
    /// newest first, and whether there are more beyond it.
    pub fn page<R>(&self, mut rows: Vec<R>, limit: i64) -> (Vec<R>, bool) {
        let has_more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        if let Cursor::Before(_) = self {
            rows.reverse();
        }
        (rows, has_more)
    }
}
