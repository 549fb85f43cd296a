//! Reading a request body within a size and a time limit, with problem
//! answers: JSON for the API and webhooks, a form for the simulated bank's
//! page, every one under the same limits.

use std::time::Duration;

use actix_web::http::header;
use actix_web::web::{Bytes, BytesMut, Payload};
use actix_web::HttpRequest;
use futures_util::StreamExt;

use crate::wire::problem::{Problem, ProblemKind};

/// The body limit of API requests and forms.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

pub const JSON: &str = "application/json";
pub const FORM: &str = "application/x-www-form-urlencoded";

/// How long a whole body may take to arrive (`HTTP_BODY_TIMEOUT_MS`). The
/// server's own timeout covers only the head: without this, a body trickled a
/// byte at a time holds its connection for as long as the client likes.
#[derive(Debug, Clone, Copy)]
pub struct BodyTimeout(pub Duration);

/// A JSON body: see [`read_body`].
pub async fn read_json(
    request: &HttpRequest,
    payload: Payload,
    limit: usize,
) -> Result<Bytes, Problem> {
    read_body(request, payload, limit, JSON).await
}

/// Checks the content type against `media_type` and that the body is sent
/// as it is (415: bodies are never inflated, so a small compressed body
/// cannot become a large one), then reads at most `limit` bytes (413) within
/// the body timeout (408).
pub async fn read_body(
    request: &HttpRequest,
    payload: Payload,
    limit: usize,
    media_type: &str,
) -> Result<Bytes, Problem> {
    let header_text = |name| {
        request
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
    };
    let encoding = header_text(header::CONTENT_ENCODING).trim();
    if !(encoding.is_empty() || encoding.eq_ignore_ascii_case("identity")) {
        return Err(Problem::new(
            ProblemKind::UnsupportedMediaType,
            "request bodies are not decompressed: send the body without a Content-Encoding",
        ));
    }
    let essence = header_text(header::CONTENT_TYPE)
        .split(';')
        .next()
        .unwrap_or("")
        .trim();
    if !essence.eq_ignore_ascii_case(media_type) {
        return Err(Problem::new(
            ProblemKind::UnsupportedMediaType,
            format!("the body must be sent as Content-Type: {media_type}"),
        ));
    }
    let &BodyTimeout(timeout) = request
        .app_data::<BodyTimeout>()
        .expect("the BodyTimeout is registered at start-up");
    actix_web::rt::time::timeout(timeout, read_limited(request, payload, limit))
        .await
        .unwrap_or_else(|_| {
            Err(Problem::new(
                ProblemKind::RequestTimeout,
                format!(
                    "the whole body must arrive within {} ms",
                    timeout.as_millis()
                ),
            )
            // What is left of the body is never read: the connection goes.
            .with_header("Connection", "close"))
        })
}

async fn read_limited(
    request: &HttpRequest,
    mut payload: Payload,
    limit: usize,
) -> Result<Bytes, Problem> {
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
