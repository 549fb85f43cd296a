//! Log lines: env_logger, with time, level, request id and target.

use std::time::Duration;

use super::log_throttle::LogThrottle;
use super::request_id::current;

/// Where actix-http reports connections it gave up on before any route:
/// malformed heads, parse errors. Anyone can send those, so they are written
/// as warnings, at most one a minute.
const MALFORMED_REQUESTS: &str = "actix_http::h1";
static MALFORMED_REQUEST_LINES: LogThrottle = LogThrottle::per(Duration::from_secs(60));

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
/// Stripe's Authorization header included, and with strangers' malformed
/// requests below ERROR and throttled. Caps, not settings: whatever
/// `RUST_LOG` says, those lines are never written, and nothing else changes.
struct CappedLogger {
    inner: env_logger::Logger,
}

impl CappedLogger {
    fn capped(metadata: &log::Metadata) -> bool {
        metadata.level() == log::Level::Trace && metadata.target().starts_with("ureq_proto")
    }

    fn from_strangers(metadata: &log::Metadata) -> bool {
        metadata.level() <= log::Level::Warn && metadata.target().starts_with(MALFORMED_REQUESTS)
    }
}

impl log::Log for CappedLogger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        if Self::from_strangers(metadata) {
            let demoted = log::Metadata::builder()
                .level(log::Level::Warn)
                .target(metadata.target())
                .build();
            return self.inner.enabled(&demoted);
        }
        !Self::capped(metadata) && self.inner.enabled(metadata)
    }

    fn log(&self, record: &log::Record) {
        if Self::from_strangers(record.metadata()) {
            if MALFORMED_REQUEST_LINES.allows() {
                self.inner.log(
                    &log::Record::builder()
                        .level(log::Level::Warn)
                        .target(record.target())
                        .args(format_args!(
                            "{} (a request no route took; such lines are written at most once a minute)",
                            record.args()
                        ))
                        .build(),
                );
            }
        } else if !Self::capped(record.metadata()) {
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
        // actix-http's errors about malformed requests are warnings.
        assert!(enabled("warn", "actix_http::h1::dispatcher", Level::Error));
        assert!(!enabled(
            "error",
            "actix_http::h1::dispatcher",
            Level::Error
        ));
    }
}
