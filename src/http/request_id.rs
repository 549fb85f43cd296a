//! Request ids: `X-Request-Id` taken from the request (when sane) or made up,
//! echoed on the response, and stamped on every log line written while the
//! request runs (`telemetry::request_id`), on the blocking threads too.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::error::BlockingError;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::web;

use crate::telemetry::request_id;

pub const HEADER: &str = "x-request-id";
const MAX_LEN: usize = 128;

/// A client's id is kept when it is short printable ASCII, so it can neither
/// forge log lines nor bloat them.
fn accept(value: &HeaderValue) -> Option<String> {
    let bytes = value.as_bytes();
    (!bytes.is_empty() && bytes.len() <= MAX_LEN && bytes.iter().all(|b| b.is_ascii_graphic()))
        .then(|| String::from_utf8_lossy(bytes).into_owned())
}

pub async fn middleware(
    mut request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let id = request
        .headers()
        .get(HEADER)
        .and_then(accept)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let value = HeaderValue::try_from(id.as_str()).expect("ids are printable ASCII");
    // Written back on the request too, so the access log can name it.
    request
        .headers_mut()
        .insert(HeaderName::from_static(HEADER), value.clone());
    let mut response = request_id::scope(id, next.call(request)).await?;
    response
        .headers_mut()
        .insert(HeaderName::from_static(HEADER), value);
    Ok(response)
}

/// `web::block`, carrying the request id onto the blocking thread.
pub async fn block<F, R>(work: F) -> Result<R, BlockingError>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let id = request_id::current();
    web::block(move || request_id::on_this_thread(id, work)).await
}
