//! Pages of a list, as every list route takes them: `limit` (1 to 100,
//! default 20), newest first, and `has_more`.

use crate::service_error::ServiceError;
use crate::validation::FieldError;

const DEFAULT_LIMIT: i64 = 20;
const MAX_LIMIT: i64 = 100;

/// The page size asked for, checked. Judged once the caller is known, so
/// an unknown API key gets its 401 first.
pub fn checked_limit(limit: Option<i64>) -> Result<i64, ServiceError> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ServiceError::Invalid(vec![FieldError::new(
            "limit",
            format!("must be between 1 and {MAX_LIMIT}"),
        )]));
    }
    Ok(limit)
}

/// `rows` (up to `limit + 1` of them) as a page of `limit`, and whether
/// there are more.
pub fn page<T>(mut rows: Vec<T>, limit: i64) -> (Vec<T>, bool) {
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    (rows, has_more)
}
