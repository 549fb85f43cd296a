//! Connected accounts (Stripe Connect, Express): a driver's account at the
//! gateway, which transfers pay once its owner is onboarded, and the links
//! that onboard them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

ridepay_diesel_helpers::text_enum! {
    /// Where an account's `transfers` capability stands: `active` once its
    /// owner has told the gateway enough to be paid; `pending` while the
    /// gateway checks what they told; `inactive` before, or when the
    /// gateway wants more.
    pub enum CapabilityStatus {
        Active = "active",
        Inactive = "inactive",
        Pending = "pending",
    }
}

/// `POST /v1/accounts`: an Express account in `country`, with the
/// `transfers` capability requested.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreateAccount {
    pub idempotency_key: String,
    pub email: String,
    /// ISO 3166-1 alpha-2, upper case.
    pub country: String,
    pub metadata: Vec<(String, String)>,
}

/// A connected account as the gateway holds it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// An `acct_` id.
    pub id: String,
    pub created: DateTime<Utc>,
    pub email: Option<String>,
    pub country: String,
    /// The `transfers` capability; `None` when it was never requested.
    pub transfers: Option<CapabilityStatus>,
    /// Whether its owner finished onboarding.
    pub details_submitted: bool,
    pub metadata: BTreeMap<String, String>,
}

impl Account {
    /// Whether a transfer to it can be made now.
    pub fn can_be_paid(&self) -> bool {
        self.transfers == Some(CapabilityStatus::Active)
    }
}

/// `POST /v1/account_links` (`type=account_onboarding`): a link, good for
/// one visit and a few minutes, where the account's owner tells the
/// gateway what it needs; it sends them to `return_url` when they leave it,
/// and to `refresh_url` when it has expired or was used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreateAccountLink {
    pub idempotency_key: String,
    pub account: String,
    pub refresh_url: String,
    pub return_url: String,
}

/// An onboarding link: a credential for one visit, never to be stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountLink {
    pub url: String,
    pub expires_at: DateTime<Utc>,
}
