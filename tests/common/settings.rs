//! Settings for a test server.
use std::time::Duration;

use ridepay::config::{DatabaseSettings, RateLimitSettings, Settings, WorkerSettings};
use ridepay::db::DbPool;

/// The defaults on a given database, on a free port, with two HTTP
/// workers, no rate limits and the background workers off (tests switch
/// them on where they are the subject, and then on short intervals).
pub fn test_settings(database_url: &str) -> Settings {
    let mut settings = Settings::default();
    settings.database.url = Some(database_url.to_owned());
    settings.server.bind_addr = "127.0.0.1:0".to_owned();
    settings.server.workers = 2;
    settings.server.rate_limit = RateLimitSettings {
        per_second: 0,
        burst: 0,
        address_per_second: 0,
        address_burst: 0,
    };
    settings.completer.enabled = false;
    settings.completer.interval = Duration::from_millis(200);
    settings.reconcile.enabled = false;
    settings.reconcile.interval = Duration::from_millis(200);
    settings.reaper = WorkerSettings {
        enabled: false,
        interval: Duration::from_secs(3600),
    };
    settings.user_webhooks.enabled = false;
    settings.drivers.transfers.enabled = false;
    settings.drivers.transfers.interval = Duration::from_millis(100);
    settings.user_webhooks.interval = Duration::from_millis(100);
    settings.user_webhooks.allow_loopback = true;
    settings
}

/// A pool on `database_url` as the service builds one by default.
pub fn pool(database_url: &str) -> DbPool {
    ridepay::db::build_pool(database_url, &DatabaseSettings::default())
}
