//! How a fake Stripe is started: where it listens, its records, its faults,
//! its key, where its events go, and its limits.

use crate::settings::SimulatedGatewaySettings;

pub struct FakeGatewayConfig {
    /// Where to listen; port 0 picks a free port.
    pub bind: String,
    /// The doubles' database (their `simulated_*` tables).
    pub database_url: String,
    pub faults: SimulatedGatewaySettings,
    /// The key clients must send; `None` accepts any.
    pub api_key: Option<String>,
    /// Where its signed payment events go; `None` sends none.
    pub webhook: Option<WebhookTarget>,
    /// Where its connected accounts' events go, as Stripe sends them to a
    /// Connect endpoint; `None` sends none.
    pub connect_webhook: Option<WebhookTarget>,
    pub limits: ConnectionLimits,
}

/// What one client may hold of the fake: a thread per connection, so a
/// bounded number of them, each for a bounded time.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Connections served at once; beyond them a client is answered 429
    /// at once, as Stripe answers too many concurrent requests.
    pub max_connections: usize,
    /// How long a request's head and body may take to arrive, however
    /// slowly they trickle.
    pub request_timeout: std::time::Duration,
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            max_connections: 64,
            request_timeout: std::time::Duration::from_secs(10),
        }
    }
}

/// Where events go, and the secret that signs them.
#[derive(Clone)]
pub struct WebhookTarget {
    pub url: String,
    pub secret: String,
}
