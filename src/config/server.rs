//! The HTTP server: where it listens and how riders' browsers reach it
//! (`BIND_ADDR`, `PUBLIC_BASE_URL`, `HTTP_*`), and the rates it allows
//! (`RATE_LIMIT_*`).

use std::time::Duration;

use anyhow::{bail, Context};

use super::source::Source;

#[derive(Debug, Clone)]
pub struct ServerSettings {
    pub bind_addr: String,
    /// HTTP worker threads; 0 means one per core.
    pub workers: usize,
    /// Where riders' browsers reach this server (the gateway sends them back
    /// here after authenticating); None: the address it binds.
    pub public_base_url: Option<String>,
    pub limits: HttpLimits,
    pub rate_limit: RateLimitSettings,
}

/// Protection against slow and numerous clients.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// Time for a request's head to arrive.
    pub client_request_timeout: Duration,
    /// Time for a whole request body to arrive, once its handler reads it.
    pub body_timeout: Duration,
    pub keep_alive: Duration,
    /// Open connections per worker thread; beyond it, accepting pauses.
    pub max_connections: usize,
}

/// Request rates; a `per_second` of 0 switches that limit off.
#[derive(Debug, Clone)]
pub struct RateLimitSettings {
    /// Per valid API key.
    pub per_second: u32,
    pub burst: u32,
    /// Per client address, for what needs no valid key: failed
    /// authentications and the unauthenticated routes.
    pub address_per_second: u32,
    pub address_burst: u32,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            bind_addr: "127.0.0.1:8080".to_owned(),
            workers: 0,
            public_base_url: None,
            limits: HttpLimits {
                client_request_timeout: Duration::from_secs(5),
                body_timeout: Duration::from_secs(10),
                keep_alive: Duration::from_secs(15),
                max_connections: 10_000,
            },
            rate_limit: RateLimitSettings {
                per_second: 100,
                burst: 200,
                address_per_second: 20,
                address_burst: 100,
            },
        }
    }
}

impl ServerSettings {
    pub(super) fn read(source: &Source) -> anyhow::Result<Self> {
        let d = ServerSettings::default();
        Ok(ServerSettings {
            bind_addr: source.var("BIND_ADDR", d.bind_addr)?,
            workers: source.var("HTTP_WORKERS", d.workers)?,
            public_base_url: source.text("PUBLIC_BASE_URL")?,
            limits: HttpLimits {
                client_request_timeout: source.millis(
                    "HTTP_CLIENT_REQUEST_TIMEOUT_MS",
                    d.limits.client_request_timeout,
                )?,
                body_timeout: source.millis("HTTP_BODY_TIMEOUT_MS", d.limits.body_timeout)?,
                keep_alive: source.secs("HTTP_KEEP_ALIVE_SECS", d.limits.keep_alive)?,
                max_connections: source.var("HTTP_MAX_CONNECTIONS", d.limits.max_connections)?,
            },
            rate_limit: RateLimitSettings {
                per_second: source.var("RATE_LIMIT_PER_SECOND", d.rate_limit.per_second)?,
                burst: source.var("RATE_LIMIT_BURST", d.rate_limit.burst)?,
                address_per_second: source.var(
                    "RATE_LIMIT_ADDRESS_PER_SECOND",
                    d.rate_limit.address_per_second,
                )?,
                address_burst: source
                    .var("RATE_LIMIT_ADDRESS_BURST", d.rate_limit.address_burst)?,
            },
        })
    }

    pub(super) fn check(&self) -> anyhow::Result<()> {
        use std::net::ToSocketAddrs;
        if self
            .bind_addr
            .to_socket_addrs()
            .map_or(true, |mut addresses| addresses.next().is_none())
        {
            bail!(
                "BIND_ADDR={:?} is not an address to listen on: give host:port, such as \
                 127.0.0.1:8080 (port 0 picks a free port)",
                self.bind_addr
            );
        }
        if let Some(url) = &self.public_base_url {
            let url = url::Url::parse(url).context("PUBLIC_BASE_URL is not a valid URL")?;
            if !["http", "https"].contains(&url.scheme()) {
                bail!(
                    "PUBLIC_BASE_URL must be a http or https URL, not {}://...",
                    url.scheme()
                );
            }
            if url.host_str().is_none_or(str::is_empty) {
                bail!("PUBLIC_BASE_URL has no host");
            }
        }
        Ok(())
    }
}
