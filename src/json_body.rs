//! Reading a JSON request body within a size limit, with problem answers.

use actix_web::http::header;
use actix_web::web::{Bytes, BytesMut, Payload};
use actix_web::HttpRequest;
use futures_util::StreamExt;

use crate::problem::{Problem, ProblemKind};

/// The body limit of API requests.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// Checks the content type (415) and reads at most `limit` bytes (413).
pub async fn read_json(
    request: &HttpRequest,
    mut payload: Payload,
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
    // Sized by what the client declared: a body is usually one small chunk,
    // and a fixed 8 KiB buffer (what `Payload::to_bytes_limited` takes) costs
    // every request an allocation the allocator is slow to give back.
    let mut body = BytesMut::with_capacity(declared.unwrap_or(0));
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|err| {
            Problem::new(
                ProblemKind::InvalidRequest,
                format!("the body could not be read: {err}"),
            )
        })?;
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}
