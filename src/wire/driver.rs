//! A driver on the wire: their JSON, the bodies of their routes, and where
//! they live.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::idempotency::StoredResponse;
use crate::public_ids::DriverPublicId;

/// A driver: the platform's payee, paid through a connected account.
#[derive(Serialize, ToSchema)]
#[schema(as = Driver)]
pub struct DriverJson {
    #[schema(value_type = String, pattern = "^drv_[a-z2-7]{29}$", example = "drv_dvpguhw534wllg33xqbbryb4gbo6m")]
    pub id: DriverPublicId,
    pub email: String,
    /// ISO 3166-1 alpha-2: the platform's country.
    pub country: String,
    /// The connected account at the gateway (`acct_...`).
    pub account_id: String,
    /// `onboarding` until the account can receive transfers, then `active`;
    /// `restricted` while the gateway stops them.
    #[schema(pattern = "^(onboarding|active|restricted)$")]
    pub status: &'static str,
    /// The driver's own onboarding page, to send them: in the answer that
    /// made it (`POST /api/drivers`, `.../onboarding_link`), and nowhere
    /// else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub onboarding_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub onboarding_url_expires_at: Option<DateTime<Utc>>,
    /// One per currency the driver has been owed in.
    pub balances: Vec<BalanceJson>,
    pub created_at: DateTime<Utc>,
}

/// What the ledger holds for a driver in one currency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[schema(as = DriverBalance)]
pub struct BalanceJson {
    pub currency: String,
    /// What ridepay owes the driver (minus the ledger balance of their
    /// payable account): below zero when the driver owes.
    pub payable_cents: i64,
    /// Transfers to the driver less their reversals.
    pub transferred_cents: i64,
}

impl DriverJson {
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a driver always serialises")
    }
}

/// Where a driver lives.
pub fn location(id: DriverPublicId) -> String {
    format!("/api/drivers/{id}")
}

/// The answer to a driver registered: 201 at their location.
pub fn created(driver: &DriverJson) -> StoredResponse {
    super::answer::created(location(driver.id), driver.body())
}

/// The body of `POST /api/drivers`, as sent (each field checked by the
/// endpoint's parameters, so that all missing ones are reported at once).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DriverRequest)]
pub struct DriverBody {
    #[schema(required, nullable = false, value_type = String, max_length = 254, example = "ada@example.com")]
    pub email: Option<String>,
    /// The platform's country (`PLATFORM_COUNTRY`).
    #[schema(required, nullable = false, value_type = String, example = "US")]
    pub country: Option<String>,
}

/// A ride's driver as the platform sees them: what the driver is owed of
/// the ride and the platform keeps, and the transfers that pay it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = RideDriver)]
pub struct RideDriverJson {
    #[schema(value_type = String, pattern = "^drv_[a-z2-7]{29}$")]
    pub id: DriverPublicId,
    /// The driver's entitlement: their share of the fare and every cent of
    /// the tip, after refunds.
    pub amount_cents: i64,
    /// What the platform keeps of what is captured and not refunded.
    pub platform_fee_cents: i64,
    pub transfers: Vec<TransferJson>,
}

/// A transfer ridepay owes (or made) to the driver for one charge.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DriverTransfer)]
pub struct TransferJson {
    /// The gateway's `tr_...` once made.
    pub id: Option<String>,
    /// The charge (`ch_...`) whose money it pays.
    pub source_charge: String,
    pub amount_cents: i64,
    pub amount_reversed_cents: i64,
    /// What the driver's debt took of the entitlement.
    pub netted_cents: i64,
    #[schema(pattern = "^(pending|paid|failed|netted)$")]
    pub status: String,
    pub failure_reason: Option<String>,
}

/// The body of `POST /api/rides/{id}/driver`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AssignDriverRequest)]
pub struct AssignDriverBody {
    #[schema(required, nullable = false, value_type = String, pattern = "^drv_[a-z2-7]{29}$")]
    pub driver_id: Option<String>,
}

/// A ride's driver in the ride JSON: who drives, for the rider; what they
/// are owed and the transfers that pay it, for the platform.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum RideDriverView {
    Rider(DriverIdJson),
    Platform(RideDriverJson),
}

/// Who drives: the rider's view.
impl From<DriverPublicId> for RideDriverView {
    fn from(id: DriverPublicId) -> Self {
        RideDriverView::Rider(DriverIdJson { id })
    }
}

/// A ride's driver as the rider sees them.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = RiderRideDriver)]
pub struct DriverIdJson {
    #[schema(value_type = String, pattern = "^drv_[a-z2-7]{29}$")]
    pub id: DriverPublicId,
}
