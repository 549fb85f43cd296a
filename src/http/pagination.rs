//! Pages of a list, as every list route takes them: `limit` (1 to 100,
//! default 20), newest first, a cursor, and `has_more`.

use serde::Deserialize;
use utoipa::IntoParams;

use crate::pages::Cursor;
use crate::public_ids::PublicId;
use crate::service_error::ServiceError;
use crate::validation::FieldError;

const DEFAULT_LIMIT: i64 = 20;
const MAX_LIMIT: i64 = 100;

/// The page size `limit` asks for (default 20), or why it is refused.
pub fn page_size(limit: Option<i64>) -> Result<i64, FieldError> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if (1..=MAX_LIMIT).contains(&limit) {
        Ok(limit)
    } else {
        Err(FieldError::new(
            "limit",
            format!("must be between 1 and {MAX_LIMIT}"),
        ))
    }
}

/// A list's query.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// 1 to 100, default 20.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
    /// The id of the last row of the page before: the rows older than it.
    starting_after: Option<String>,
    /// The id of the first row of the page after: the rows newer than it.
    /// Not with `starting_after`.
    ending_before: Option<String>,
    /// Integer cursors page no more: refused, by name.
    #[param(ignore)]
    before_id: Option<String>,
}

impl ListQuery {
    /// The page size and the cursor asked for, checked. Judged once the
    /// caller is known, so an unknown API key gets its 401 first.
    pub fn checked<T: PublicId>(&self) -> Result<(i64, Cursor<T>), ServiceError> {
        let mut errors = Vec::new();
        let limit = page_size(self.limit).unwrap_or_else(|error| {
            errors.push(error);
            DEFAULT_LIMIT
        });
        if self.before_id.is_some() {
            errors.push(FieldError::new(
                "before_id",
                "is not taken: page with starting_after, the id of the last row of the page before",
            ));
        }
        let mut id = |field: &str, text: &Option<String>| {
            let text = text.as_deref()?;
            let id = T::parse(text);
            if id.is_none() {
                errors.push(FieldError::new(
                    field,
                    format!("must be a {} id", T::PREFIX),
                ));
            }
            id
        };
        let cursor = match (
            id("starting_after", &self.starting_after),
            id("ending_before", &self.ending_before),
        ) {
            (Some(_), Some(_)) => {
                errors.push(FieldError::new(
                    "ending_before",
                    "may not be given with starting_after",
                ));
                Cursor::Newest
            }
            (Some(after), None) => Cursor::After(after),
            (None, Some(before)) => Cursor::Before(before),
            (None, None) => Cursor::Newest,
        };
        if !errors.is_empty() {
            return Err(ServiceError::Invalid(errors));
        }
        Ok((limit, cursor))
    }
}
