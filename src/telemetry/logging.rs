//! Log lines: env_logger, with time, level, request id and target.

use super::request_id::current;

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
