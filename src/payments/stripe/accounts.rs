//! Connected accounts over Stripe's HTTP API: a driver's Express account
//! made with the `transfers` capability requested (`POST /v1/accounts`),
//! the link that onboards its owner (`POST /v1/account_links`), and the
//! account read again to learn whether it can be paid.

use std::collections::BTreeMap;

use chrono::DateTime;
use serde::Deserialize;

use super::intents::{metadata_fields, pair, Form};
use super::outcome::{read_list, unreadable};
use super::wire::page_query;
use ridepay_gateway::{
    Account, AccountLink, AccountPage, CapabilityStatus, CreateAccount, CreateAccountLink,
    GatewayError, ListAccounts,
};

/// `POST /v1/accounts`.
pub fn create_form(request: &CreateAccount) -> Form {
    let mut form = vec![
        pair("type", "express"),
        pair("country", &request.country),
        pair("email", &request.email),
        pair("capabilities[transfers][requested]", true),
    ];
    form.extend(metadata_fields(&request.metadata));
    form
}

/// An account, as far as ridepay reads it.
#[derive(Debug, Deserialize)]
struct AccountObject {
    id: String,
    created: Option<i64>,
    email: Option<String>,
    country: Option<String>,
    #[serde(default)]
    capabilities: Capabilities,
    #[serde(default)]
    details_submitted: bool,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
struct Capabilities {
    transfers: Option<String>,
}

/// An account Stripe made or holds.
pub fn account(body: &[u8]) -> Result<Account, GatewayError> {
    serde_json::from_slice::<AccountObject>(body)
        .map_err(|err| unreadable("account", err))?
        .account()
}

/// The query of `GET /v1/accounts`: `created[gte]` in whole seconds.
pub fn list_query(request: &ListAccounts) -> Vec<(&'static str, String)> {
    let since = request
        .created_gte
        .map(|since| since.timestamp().to_string());
    let optional = [
        ("created[gte]", since),
        ("starting_after", request.starting_after.clone()),
    ];
    page_query(request.limit, optional)
}

/// A page of accounts.
pub fn page(body: &[u8]) -> Result<AccountPage, GatewayError> {
    let (accounts, has_more) = read_list(body, "account list", AccountObject::account)?;
    Ok(AccountPage { accounts, has_more })
}

impl AccountObject {
    fn account(self) -> Result<Account, GatewayError> {
        let object = self;
        let transfers = match object.capabilities.transfers.as_deref() {
            None => None,
            Some(status) => Some(
                CapabilityStatus::parse(status)
                    .ok_or_else(|| unreadable("account", format!("transfers {status:?}")))?,
            ),
        };
        let created = object.created.unwrap_or_default();
        Ok(Account {
            created: DateTime::from_timestamp(created, 0)
                .ok_or_else(|| unreadable("account", format!("created {created}")))?,
            id: object.id,
            email: object.email,
            country: object.country.unwrap_or_default(),
            transfers,
            details_submitted: object.details_submitted,
            metadata: object.metadata,
        })
    }
}

/// `POST /v1/account_links`.
pub fn link_form(request: &CreateAccountLink) -> Form {
    vec![
        pair("account", &request.account),
        pair("type", "account_onboarding"),
        pair("refresh_url", &request.refresh_url),
        pair("return_url", &request.return_url),
    ]
}

#[derive(Debug, Deserialize)]
struct AccountLinkObject {
    url: String,
    expires_at: i64,
}

/// An onboarding link Stripe made.
pub fn account_link(body: &[u8]) -> Result<AccountLink, GatewayError> {
    let object: AccountLinkObject =
        serde_json::from_slice(body).map_err(|err| unreadable("account link", err))?;
    Ok(AccountLink {
        url: object.url,
        expires_at: DateTime::from_timestamp(object.expires_at, 0).ok_or_else(|| {
            unreadable("account link", format!("expires_at {}", object.expires_at))
        })?,
    })
}
