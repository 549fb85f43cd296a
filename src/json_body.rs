//! Reading a JSON request body within a size limit, with problem answers.

use actix_web::http::header;
use actix_web::web::{Bytes, Payload};
use actix_web::HttpRequest;

use crate::problem::{Problem, ProblemKind};

/// The body limit of API requests.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// Checks the content type (415) and reads at most `limit` bytes (413).
pub async fn read_json(
    request: &HttpRequest,
    payload: Payload,
    limit: usize,
) -> Result<Bytes, Problem> {
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return Err(Problem::new(
            ProblemKind::UnsupportedMediaType,
            "the body must be sent as Content-Type: application/json",
        ));
    }
    let too_large = || {
        Problem::new(
            ProblemKind::PayloadTooLarge,
            format!("the body must be at most {limit} bytes"),
        )
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|length| length > limit) {
        return Err(too_large());
    }
    match payload.to_bytes_limited(limit).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(err)) => Err(Problem::new(
            ProblemKind::InvalidRequest,
            format!("the body could not be read: {err}"),
        )),
        Err(_) => Err(too_large()),
    }
}
