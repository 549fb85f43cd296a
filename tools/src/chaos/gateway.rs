//! The gateway the instances pay through, with the campaign's faults: each
//! instance's own simulated gateway, or ridepay's Stripe client against
//! `ridepay fake-gateway`, which keeps its records in a database of its own on
//! the campaign's server and sends its signed webhooks (its payments' and,
//! to the Connect endpoint, its connected accounts') to one instance.

use std::net::{Ipv4Addr, TcpListener};

use anyhow::{bail, Context};
use rand::Rng;
use ridepay::embedded_postgres::connect_with_retry;

use super::audit::GatewayRecords;
use super::options::{GatewayChoice, Options};
use crate::database::{BesideDatabase, Database};
use crate::process::Announced;
use crate::ridepay::{var, Ridepay};

/// The instance the fake's webhooks go to.
///
/// The fake is given one webhook URL when it starts, as a Stripe account is
/// given its endpoint, while the campaign SIGKILLs and restarts instances. So
/// this instance listens on a fixed port at every restart: the fake's events
/// wait while it is down and are sent again once it is back, as Stripe
/// resends to an endpoint that is down. (Restarting the fake with the
/// instance instead would also drop what the fake keeps in memory, its keys
/// in flight and the failures it saved, which Stripe never forgets.)
const WEBHOOK_INSTANCE: usize = 0;
const API_KEY: &str = "sk_test_chaos";
const WEBHOOK_SECRET: &str = "whsec_chaos";
const CONNECT_WEBHOOK_SECRET: &str = "whsec_chaos_connect";

pub struct Gateway {
    /// The gateway's part of every instance's environment.
    env: Vec<(String, String)>,
    /// What the webhook instance is given besides: its fixed address.
    webhook_instance_env: Vec<(String, String)>,
    /// The database holding the gateway's records.
    records_url: String,
    /// The name its records carry (`simulated_payment_intents.gateway`).
    double: &'static str,
    // Dropped in this order: the fake stops before its database is dropped.
    _fake: Option<Announced>,
    _records: Option<BesideDatabase>,
}

impl Gateway {
    pub fn start(
        options: &Options,
        ridepay: &Ridepay,
        database: &Database,
    ) -> anyhow::Result<Gateway> {
        let faults = vec![
            var("SIMULATED_GATEWAY_LATENCY_MS", options.gateway_latency_ms),
            var("SIMULATED_GATEWAY_FAIL_RATE", options.fail_rate),
            var(
                "SIMULATED_GATEWAY_LOST_RESPONSE_RATE",
                options.lost_response_rate,
            ),
            var("SIMULATED_GATEWAY_RATE_LIMIT_RATE", options.rate_limit_rate),
            var(
                "SIMULATED_GATEWAY_SAVED_ERROR_RATE",
                options.saved_error_rate,
            ),
        ];
        if options.gateway == GatewayChoice::Simulated {
            return Ok(Gateway {
                env: faults,
                webhook_instance_env: Vec::new(),
                records_url: database.url.clone(),
                double: "simulated",
                _fake: None,
                _records: None,
            });
        }
        let records = database.create_beside("chaos_gateway")?;
        let webhook_address = format!("127.0.0.1:{}", fixed_port()?);
        let mut fake_env = faults;
        fake_env.extend([
            var("FAKE_GATEWAY_API_KEY", API_KEY),
            var("STRIPE_WEBHOOK_SECRET", WEBHOOK_SECRET),
        ]);
        let fake = ridepay.fake_gateway(
            &records.url,
            &[
                "--webhook-url".to_owned(),
                format!("http://{webhook_address}/webhooks/stripe"),
                "--connect-webhook-url".to_owned(),
                format!("http://{webhook_address}/webhooks/stripe/connect"),
                "--connect-webhook-secret".to_owned(),
                CONNECT_WEBHOOK_SECRET.to_owned(),
            ],
            &fake_env,
        )?;
        Ok(Gateway {
            env: vec![
                var("GATEWAY", "stripe"),
                var("STRIPE_API_BASE", format!("http://{}", fake.address)),
                var("STRIPE_API_KEY", API_KEY),
                var("STRIPE_WEBHOOK_SECRET", WEBHOOK_SECRET),
                var("STRIPE_CONNECT_WEBHOOK_SECRET", CONNECT_WEBHOOK_SECRET),
                // Twice their sum must fit in the lease (config validation).
                var("STRIPE_TIMEOUT_MS", 1000),
                var("STRIPE_CONNECT_TIMEOUT_MS", 300),
            ],
            webhook_instance_env: vec![var("BIND_ADDR", webhook_address)],
            records_url: records.url.clone(),
            double: "fake",
            _fake: Some(fake),
            _records: Some(records),
        })
    }

    /// The gateway's part of instance `index`'s environment.
    pub fn instance_env(&self, index: usize) -> Vec<(String, String)> {
        let mut env = self.env.clone();
        if index == WEBHOOK_INSTANCE {
            env.extend(self.webhook_instance_env.iter().cloned());
        }
        env
    }

    /// The environment a one-off command (`ridepay ledger check`) reaches
    /// the gateway with: the instances', less the simulated gateway's
    /// faults (the fake's are its own, and spare reads).
    pub fn command_env(&self) -> Vec<(String, String)> {
        match self.double {
            "simulated" => Vec::new(),
            _ => self.env.clone(),
        }
    }

    /// The database of the gateway's records, which its test controls
    /// (`ridepay simulated-gateway`) act on.
    pub fn records_url(&self) -> &str {
        &self.records_url
    }

    /// A connection to the gateway's records, for the audit.
    pub fn records(&self) -> anyhow::Result<GatewayRecords> {
        Ok(GatewayRecords {
            conn: connect_with_retry(&self.records_url)?,
            gateway: self.double,
        })
    }
}

/// A free loopback port below the ephemeral range: no outgoing connection is
/// given it as its source port while the webhook instance is down, so the
/// instance gets it back at every restart.
fn fixed_port() -> anyhow::Result<u16> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .context("cannot read the ephemeral port range")?;
    let low: u16 = range
        .split_whitespace()
        .next()
        .and_then(|port| port.parse().ok())
        .context("unexpected ephemeral port range")?;
    let ports = (low / 2).max(1024)..low;
    if ports.is_empty() {
        bail!("no port below the ephemeral range ({low}) to give the webhook instance");
    }
    for _ in 0..100 {
        let port = rand::thread_rng().gen_range(ports.clone());
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            return Ok(port);
        }
    }
    bail!("no free port in {ports:?} for the webhook instance")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_webhook_port_is_free_and_below_the_ephemeral_range() {
        let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap();
        let low: u16 = range.split_whitespace().next().unwrap().parse().unwrap();
        let port = fixed_port().unwrap();
        assert!((1024..low).contains(&port), "{port} not below {low}");
        TcpListener::bind((Ipv4Addr::LOCALHOST, port)).unwrap();
    }
}
