//! Connected accounts (Stripe Connect, Express): a driver's account at the
//! gateway, which transfers pay once its owner is onboarded, and the links
//! that onboard them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::listing::ListIntents;

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

/// `GET /v1/accounts`: the platform's connected accounts made since
/// `created_gte` (whole seconds), newest first, the page after the account
/// `starting_after`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListAccounts {
    pub created_gte: Option<DateTime<Utc>>,
    pub starting_after: Option<String>,
    /// At most 100, Stripe's limit.
    pub limit: u8,
}

/// A page of accounts, and whether more follow it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AccountPage {
    pub accounts: Vec<Account>,
    pub has_more: bool,
}

impl ListAccounts {
    /// The first page of the accounts made since `created_gte`: what proves
    /// whether an account was made, as a list never lags.
    pub fn since(created_gte: DateTime<Utc>) -> ListAccounts {
        ListAccounts {
            created_gte: Some(created_gte),
            starting_after: None,
            limit: ListIntents::MAX_LIMIT,
        }
    }

    /// The page after `page`, or `None` when it was the last.
    pub fn after(&self, page: &AccountPage) -> Option<ListAccounts> {
        let last = page.accounts.last().filter(|_| page.has_more)?;
        Some(ListAccounts {
            starting_after: Some(last.id.clone()),
            ..self.clone()
        })
    }
}
