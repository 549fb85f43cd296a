//! Drivers and their pay (`PLATFORM_*`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;

use super::keys::WorkerSettings;
use super::source::Source;
use crate::doorbell::Doorbell;

#[derive(Debug, Clone)]
pub struct DriverSettings {
    /// The platform's country (ISO 3166-1 alpha-2): every driver's, since
    /// paying a driver elsewhere needs the gateway's cross-border terms.
    pub platform_country: String,
    /// The platform's cut of a fare, in basis points (2000: 20 %, as
    /// Rocket Rides kept), fixed on a ride when its driver is assigned.
    pub commission_bps: u16,
    /// The worker that makes the transfers owed to drivers.
    pub transfers: WorkerSettings,
    /// How long a worker's claim keeps other workers off a transfer or a
    /// reversal it is making: longer than a gateway call may take.
    pub claim: Duration,
    /// How old what ridepay knows of a driver's account may be when the
    /// worker pays them: older, the account is read again first.
    pub status_max_age: Duration,
}

impl Default for DriverSettings {
    fn default() -> Self {
        DriverSettings {
            platform_country: "US".to_owned(),
            commission_bps: 2000,
            transfers: WorkerSettings {
                enabled: true,
                interval: Duration::from_secs(2),
            },
            claim: Duration::from_secs(60),
            status_max_age: Duration::from_secs(300),
        }
    }
}

impl DriverSettings {
    pub(super) fn read(source: &Source) -> anyhow::Result<Self> {
        let d = DriverSettings::default();
        Ok(DriverSettings {
            platform_country: source.var("PLATFORM_COUNTRY", d.platform_country)?,
            commission_bps: source.var("PLATFORM_COMMISSION_BPS", d.commission_bps)?,
            transfers: WorkerSettings {
                enabled: source.var("TRANSFER_WORKER_ENABLED", d.transfers.enabled)?,
                interval: source.millis("TRANSFER_WORKER_INTERVAL_MS", d.transfers.interval)?,
            },
            claim: source.secs("TRANSFER_CLAIM_SECS", d.claim)?,
            status_max_age: source.secs("DRIVER_STATUS_MAX_AGE_SECS", d.status_max_age)?,
        })
    }

    pub(super) fn check(&self) -> anyhow::Result<()> {
        let country = &self.platform_country;
        if country.len() != 2 || !country.bytes().all(|byte| byte.is_ascii_uppercase()) {
            bail!("PLATFORM_COUNTRY must be two capital letters (ISO 3166-1 alpha-2): {country:?}");
        }
        if self.transfers.interval.is_zero() {
            bail!("TRANSFER_WORKER_INTERVAL_MS must be at least 1");
        }
        if self.claim.is_zero() {
            bail!("TRANSFER_CLAIM_SECS must be at least 1");
        }
        if self.commission_bps > 10_000 {
            bail!("PLATFORM_COMMISSION_BPS must be 0 to 10000 (basis points of a fare)");
        }
        Ok(())
    }
}

/// What registering, onboarding and paying drivers works with, made at
/// start-up from these settings, the server's and the gateway's.
pub struct DriverContext {
    /// `PLATFORM_COUNTRY`.
    pub country: String,
    /// `PLATFORM_COMMISSION_BPS`.
    pub commission_bps: u16,
    /// Where drivers' onboarding pages are: `PUBLIC_BASE_URL` and
    /// `/drivers/onboarding`.
    pub pages: String,
    /// Whether the gateway's key is a live one.
    pub livemode: bool,
    /// `DRIVER_STATUS_MAX_AGE_SECS`.
    pub status_max_age: Duration,
    /// `TRANSFER_CLAIM_SECS`.
    pub claim: Duration,
    /// Rung by a request that may have left a transfer or a reversal owed:
    /// this instance's transfer worker makes it at once.
    pub transfers_due: Arc<Doorbell>,
}
