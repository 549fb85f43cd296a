//! The campaign's command line.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GatewayChoice {
    /// The in-process simulated gateway of each instance.
    Simulated,
    /// ridepay's Stripe client (`GATEWAY=stripe`) against `ridepay
    /// fake-gateway`, which keeps its records in a database of its own and
    /// sends signed webhooks.
    Stripe,
}

#[derive(Debug, Clone, Parser)]
#[command(
    name = "chaos",
    about = "Kill ridepay instances at random under retrying clients, then audit every payment"
)]
pub struct Options {
    /// How long clients start new keys and instances get killed.
    #[arg(long, default_value = "120s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Upper bound on HTTP requests; clients start no new key past it.
    #[arg(long, default_value_t = 200_000)]
    pub max_requests: u64,
    /// Concurrent clients, each walking one ride through its life at a time,
    /// one key after another.
    #[arg(long, default_value_t = 24)]
    pub clients: usize,
    /// What the instances pay through.
    #[arg(long, value_enum, default_value_t = GatewayChoice::Simulated)]
    pub gateway: GatewayChoice,
    /// Mean time between two SIGKILLs (uniform between half and one and a half of it).
    #[arg(long, default_value = "1500ms", value_parser = humantime::parse_duration)]
    pub kill_interval: Duration,
    /// Share of gateway calls failing before acting.
    #[arg(long, default_value_t = 0.05)]
    pub fail_rate: f64,
    /// Share of gateway calls that act, then lose the response.
    #[arg(long, default_value_t = 0.05)]
    pub lost_response_rate: f64,
    /// Share of gateway calls answered with a rate limit (429 from the fake).
    #[arg(long, default_value_t = 0.02)]
    pub rate_limit_rate: f64,
    /// Share of gateway calls answered with a 500 saved under the key and
    /// replayed to every retry, as Stripe does (half before acting, half
    /// after): reconciliation resolves each such key.
    #[arg(long, default_value_t = 0.02)]
    pub saved_error_rate: f64,
    /// Delay of every gateway call.
    #[arg(long, default_value_t = 10)]
    pub gateway_latency_ms: u64,
    /// Share of rides paid with a card that declines.
    #[arg(long, default_value_t = 0.1)]
    pub decline_share: f64,
    /// Share of rides asked for with automatic capture (paid at once); the
    /// others are held, then completed or cancelled.
    #[arg(long, default_value_t = 0.2)]
    pub automatic_share: f64,
    /// Share of held rides on a card that declines raising the hold.
    #[arg(long, default_value_t = 0.1)]
    pub no_raise_share: f64,
    /// Share of held rides completed; the others are cancelled.
    #[arg(long, default_value_t = 0.7)]
    pub complete_share: f64,
    /// Share of cancellations that capture a fee from the hold.
    #[arg(long, default_value_t = 0.5)]
    pub fee_share: f64,
    /// Share of held rides tipped before they are completed, and of rides
    /// paid at once (on the saved card) tipped after.
    #[arg(long, default_value_t = 0.3)]
    pub tip_share: f64,
    /// Share of paid rides (or captured fees) partly refunded.
    #[arg(long, default_value_t = 0.3)]
    pub refund_share: f64,
    /// Drivers the platform registers and onboards before the clients
    /// start; one of them is restricted for the middle third of the run.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(2..))]
    pub drivers: u8,
    /// Share of rides with money captured (or held) given a driver.
    #[arg(long, default_value_t = 0.6)]
    pub assign_share: f64,
    /// Share of those assigned while held, before they are completed; the
    /// others once paid.
    #[arg(long, default_value_t = 0.5)]
    pub assign_held_share: f64,
    /// Share of refunds of a ride with a driver sent once its transfers
    /// are made (so that the refund owes a reversal); the others at once,
    /// mostly taken off a transfer not made yet.
    #[arg(long, default_value_t = 0.5)]
    pub refund_after_paid_share: f64,
    /// Mean time between two moves of a driver's balance at the gateway:
    /// pending funds made available, or the available balance paid out.
    #[arg(long, default_value = "800ms", value_parser = humantime::parse_duration)]
    pub balance_interval: Duration,
    /// Share of those moves that pay the balance out (reversals then
    /// refused: debt); the others make pending funds available.
    #[arg(long, default_value_t = 0.3)]
    pub pay_out_share: f64,
    /// Share of finished keys sent once more, to check the replay.
    #[arg(long, default_value_t = 0.25)]
    pub replay_share: f64,
    /// Share of keys whose client walks away after the first transient
    /// failure, leaving the key to the completer.
    #[arg(long, default_value_t = 0.03)]
    pub abandon_share: f64,
    /// A client gives up on an attempt after this long, and retries.
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
    pub request_timeout: Duration,
    /// How long the completer gets to finish what clients left behind.
    #[arg(long, default_value = "120s", value_parser = humantime::parse_duration)]
    pub settle_limit: Duration,
    /// The ridepay binary; by default built with `cargo build -p ridepay` in
    /// this tool's profile.
    #[arg(long)]
    pub ridepay_bin: Option<PathBuf>,
}
