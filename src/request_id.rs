//! Request ids: `X-Request-Id` taken from the request (when sane) or made up,
//! echoed on the response, and stamped on every log line written while the
//! request runs, on the async task and on the blocking threads it uses.

use std::cell::RefCell;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::error::BlockingError;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::web;

pub const HEADER: &str = "x-request-id";
const MAX_LEN: usize = 128;

tokio::task_local! {
    static TASK_ID: String;
}

thread_local! {
    static THREAD_ID: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The id of the request being handled here, if any.
pub fn current() -> Option<String> {
    TASK_ID
        .try_with(Clone::clone)
        .ok()
        .or_else(|| THREAD_ID.with(|id| id.borrow().clone()))
}

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
    let mut response = TASK_ID.scope(id, next.call(request)).await?;
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
    let id = current();
    web::block(move || {
        THREAD_ID.with(|slot| *slot.borrow_mut() = id);
        let result = work();
        THREAD_ID.with(|slot| *slot.borrow_mut() = None);
        result
    })
    .await
}

/// env_logger lines with time, level, request id and target, filtered by
/// `RUST_LOG` (default `info`).
pub fn init_logging() {
    let filters = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".to_owned());
    let logger = logger(&filters);
    log::set_max_level(logger.inner.filter());
    log::set_boxed_logger(Box::new(logger)).expect("logging is set up once");
}

fn logger(filters: &str) -> CappedLogger {
    use std::io::Write;
    let inner = env_logger::Builder::new()
        .parse_filters(filters)
        .format(|out, record| {
            writeln!(
                out,
                "{} {:<5} [{}] {}: {}",
                chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ"),
                record.level(),
                current().as_deref().unwrap_or("-"),
                record.target(),
                record.args()
            )
        })
        .build();
    CappedLogger { inner }
}

/// env_logger, less ureq-proto's trace lines, which dump the raw request,
/// Stripe's Authorization header included. A cap, not a setting: whatever
/// `RUST_LOG` says, those lines are never written, and nothing else changes.
struct CappedLogger {
    inner: env_logger::Logger,
}

impl CappedLogger {
    fn capped(metadata: &log::Metadata) -> bool {
        metadata.level() == log::Level::Trace && metadata.target().starts_with("ureq_proto")
    }
}

impl log::Log for CappedLogger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        !Self::capped(metadata) && self.inner.enabled(metadata)
    }

    fn log(&self, record: &log::Record) {
        if !Self::capped(record.metadata()) {
            self.inner.log(record);
        }
    }

    fn flush(&self) {
        self.inner.flush();
    }
}

#[cfg(test)]
mod tests {
    use log::{Level, Log, Metadata};

    use super::logger;

    fn enabled(filters: &str, target: &str, level: Level) -> bool {
        logger(filters).enabled(&Metadata::builder().target(target).level(level).build())
    }

    #[test]
    fn rust_log_is_obeyed_and_ureq_proto_never_logs_its_raw_requests() {
        assert!(!enabled("info", "ureq_proto::client", Level::Debug));
        assert!(enabled("info", "ridepay::startup", Level::Info));
        assert!(!enabled("info", "ridepay::startup", Level::Debug));
        assert!(enabled("trace", "ureq_proto::client", Level::Debug));
        assert!(!enabled("trace", "ureq_proto::client", Level::Trace));
        assert!(enabled("trace", "ureq::unversioned", Level::Trace));
    }
}
