//! Connected accounts, as Stripe Connect holds them: made with the
//! `transfers` capability requested and `inactive` until their owner is
//! onboarded through a link to the double's onboarding page; idempotent
//! under the caller's key, as every POST is. Every change to an account is
//! announced with `account.updated`, as Stripe announces it to Connect
//! endpoints; tests restrict and activate accounts as Stripe would when
//! their requirements fall past due or are met again, and make their
//! balances available or pay them out (`account_balance`).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde_json::Value;

pub use crate::account_balance::{make_available, pay_out};
use crate::events::{self, Double, ObjectKind};
use crate::intents::{random_id, storage, transaction, whole_seconds, Call, Replayable};
use crate::return_url::valid_return_url;
use crate::schema::{simulated_account_links, simulated_accounts};
use ridepay_gateway::{
    Account, AccountLink, AccountPage, CapabilityStatus, CreateAccount, CreateAccountLink,
    GatewayError, ListAccounts, ListIntents,
};

/// The countries the doubles make accounts in: Stripe's Express countries
/// that ridepay's currencies are paid in.
const COUNTRIES: [&str; 4] = ["US", "GB", "IE", "FR"];

#[derive(Debug, Queryable, QueryableByName, Selectable, Insertable)]
#[diesel(table_name = simulated_accounts, check_for_backend(diesel::pg::Pg))]
struct StoredAccount {
    id: String,
    gateway: Double,
    email: Option<String>,
    country: String,
    transfers: CapabilityStatus,
    details_submitted: bool,
    metadata: Value,
    created_at: DateTime<Utc>,
}

impl StoredAccount {
    fn account(&self) -> Account {
        Account {
            id: self.id.clone(),
            created: self.created_at,
            email: self.email.clone(),
            country: self.country.clone(),
            transfers: Some(self.transfers),
            details_submitted: self.details_submitted,
            metadata: serde_json::from_value(self.metadata.clone()).unwrap_or_default(),
        }
    }
}

impl Replayable for Account {}

impl Replayable for AccountLink {}

/// `POST /v1/accounts` (`type=express`, `capabilities[transfers][requested]`).
pub fn create(
    conn: &mut PgConnection,
    request: &CreateAccount,
    double: Double,
) -> Result<Account, GatewayError> {
    let call = Call::new("create_account", &request.idempotency_key, request);
    if let Some(kept) = call.kept(conn).map_err(storage)? {
        return call.replay(kept);
    }
    if !COUNTRIES.contains(&request.country.as_str()) {
        let refused = Err(GatewayError::Rejected {
            message: format!(
                "country_unsupported: Connected accounts cannot be created in {}",
                request.country
            ),
        });
        return call.answer_once(conn, refused, |conn, answer| call.keep(conn, answer));
    }
    let metadata = request
        .metadata
        .iter()
        .map(|(name, value)| (name.clone(), Value::String(value.clone())))
        .collect();
    let made = StoredAccount {
        id: random_id("acct_sim_"),
        gateway: double,
        email: Some(request.email.clone()),
        country: request.country.clone(),
        transfers: CapabilityStatus::Inactive,
        details_submitted: false,
        metadata: Value::Object(metadata),
        created_at: whole_seconds(Utc::now()),
    };
    call.answer_once(conn, Ok(made.account()), |conn, answer| {
        call.keep_making(conn, answer, |conn| {
            diesel::insert_into(simulated_accounts::table)
                .values(&made)
                .execute(conn)
        })
    })
}

/// The account `id` of `double`, if it holds one.
pub fn retrieve(
    conn: &mut PgConnection,
    id: &str,
    double: Double,
) -> Result<Option<Account>, GatewayError> {
    simulated_accounts::table
        .filter(simulated_accounts::id.eq(id))
        .filter(simulated_accounts::gateway.eq(double))
        .select(StoredAccount::as_select())
        .first(conn)
        .optional()
        .map(|found| found.map(|account| account.account()))
        .map_err(storage)
}

/// `GET /v1/accounts`: the accounts of `double` made since `created_gte`,
/// newest first (ties by id), the page after `starting_after`.
pub fn list(
    conn: &mut PgConnection,
    request: &ListAccounts,
    double: Double,
) -> Result<AccountPage, GatewayError> {
    let limit = request.limit.clamp(1, ListIntents::MAX_LIMIT);
    let since = request.created_gte.map(whole_seconds).unwrap_or_default();
    let after = match &request.starting_after {
        None => None,
        Some(id) => Some(
            retrieve(conn, id, double)?.ok_or_else(|| GatewayError::Rejected {
                message: format!("resource_missing: No such account: '{id}'"),
            })?,
        ),
    };
    let (before_at, before_id) = after.map_or((None, None), |account| {
        (Some(account.created), Some(account.id))
    });
    let mut found: Vec<StoredAccount> = diesel::sql_query(
        "SELECT * FROM simulated_accounts
         WHERE gateway = $1 AND created_at >= $2
           AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4))
         ORDER BY created_at DESC, id DESC LIMIT $5",
    )
    .bind::<diesel::sql_types::Text, _>(double.as_str())
    .bind::<diesel::sql_types::Timestamptz, _>(since)
    .bind::<diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>, _>(before_at)
    .bind::<diesel::sql_types::Nullable<diesel::sql_types::Text>, _>(before_id)
    .bind::<diesel::sql_types::BigInt, _>(i64::from(limit) + 1)
    .load(conn)
    .map_err(storage)?;
    let has_more = found.len() > usize::from(limit);
    found.truncate(usize::from(limit));
    Ok(AccountPage {
        accounts: found.iter().map(StoredAccount::account).collect(),
        has_more,
    })
}

/// How long an onboarding link lasts, as Stripe's do: a few minutes.
pub const LINK_LASTS: chrono::Duration = chrono::Duration::minutes(5);

/// `POST /v1/account_links` (`type=account_onboarding`): a link to the
/// double's onboarding page (`page`), for an account of its own.
pub fn create_link(
    conn: &mut PgConnection,
    request: &CreateAccountLink,
    double: Double,
    page: &str,
) -> Result<AccountLink, GatewayError> {
    let call = Call::new("create_account_link", &request.idempotency_key, request);
    if let Some(kept) = call.kept(conn).map_err(storage)? {
        return call.replay(kept);
    }
    let refused = if retrieve(conn, &request.account, double)?.is_none() {
        Some(format!(
            "resource_missing: No such account: '{}'",
            request.account
        ))
    } else if [&request.refresh_url, &request.return_url]
        .iter()
        .any(|url| valid_return_url(url).is_none())
    {
        Some("url_invalid: refresh_url and return_url must be http or https URLs".to_owned())
    } else {
        None
    };
    if let Some(message) = refused {
        let refused = Err(GatewayError::Rejected { message });
        return call.answer_once(conn, refused, |conn, answer| call.keep(conn, answer));
    }
    let id = random_id("link_sim_");
    let expires_at = whole_seconds(Utc::now() + LINK_LASTS);
    let link = AccountLink {
        url: format!("{page}?link={id}"),
        expires_at,
    };
    call.answer_once(conn, Ok(link), |conn, answer| {
        call.keep_making(conn, answer, |conn| {
            diesel::insert_into(simulated_account_links::table)
                .values((
                    simulated_account_links::id.eq(&id),
                    simulated_account_links::account.eq(&request.account),
                    simulated_account_links::refresh_url.eq(&request.refresh_url),
                    simulated_account_links::return_url.eq(&request.return_url),
                    simulated_account_links::expires_at.eq(expires_at),
                ))
                .execute(conn)
        })
    })
}

/// An onboarding link as its page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Onboarding {
    pub email: Option<String>,
    pub refresh_url: String,
    pub return_url: String,
    /// Used, or expired: the page sends the owner to `refresh_url`.
    pub spent: bool,
}

/// What the owner says on the page: done, or leaving before the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Onboarded {
    Complete,
    Incomplete,
}

/// The link `id` of an account of `double`, as its page shows it.
pub fn onboarding(
    conn: &mut PgConnection,
    id: &str,
    double: Double,
) -> Result<Option<Onboarding>, GatewayError> {
    let found: Option<(Option<String>, String, String, bool)> = simulated_account_links::table
        .inner_join(simulated_accounts::table)
        .filter(simulated_account_links::id.eq(id))
        .filter(simulated_accounts::gateway.eq(double))
        .select((
            simulated_accounts::email,
            simulated_account_links::refresh_url,
            simulated_account_links::return_url,
            simulated_account_links::used_at
                .is_not_null()
                .or(simulated_account_links::expires_at.lt(diesel::dsl::now)),
        ))
        .first(conn)
        .optional()
        .map_err(storage)?;
    Ok(
        found.map(|(email, refresh_url, return_url, spent)| Onboarding {
            email,
            refresh_url,
            return_url,
            spent,
        }),
    )
}

/// The owner's answer on the page of link `id`: the link used up, and,
/// when they finished, the account's `transfers` capability active. What
/// the link was, before; `None` for no such link.
pub fn onboard(
    conn: &mut PgConnection,
    id: &str,
    double: Double,
    answer: Onboarded,
) -> Result<Option<Onboarding>, GatewayError> {
    transaction(conn, |conn| {
        let Some(link) = onboarding(conn, id, double)? else {
            return Ok(None);
        };
        let used = diesel::update(
            simulated_account_links::table
                .filter(simulated_account_links::id.eq(id))
                .filter(simulated_account_links::used_at.is_null())
                .filter(simulated_account_links::expires_at.ge(diesel::dsl::now)),
        )
        .set(simulated_account_links::used_at.eq(diesel::dsl::now))
        .returning(simulated_account_links::account)
        .get_result::<String>(conn)
        .optional()
        .map_err(storage)?;
        if let (Some(account), Onboarded::Complete) = (used, answer) {
            change(conn, &account, |stored| {
                stored.transfers = CapabilityStatus::Active;
                stored.details_submitted = true;
            })?;
        }
        Ok(Some(link))
    })
}

/// Makes the account's `transfers` capability `inactive`, as Stripe does
/// when its requirements fall past due. Any account, of either double.
pub fn restrict(conn: &mut PgConnection, id: &str) -> Result<Account, GatewayError> {
    set_transfers(conn, id, CapabilityStatus::Inactive)
}

/// Makes the account's `transfers` capability `active` again, as when its
/// requirements are met. Any account, of either double.
pub fn activate(conn: &mut PgConnection, id: &str) -> Result<Account, GatewayError> {
    set_transfers(conn, id, CapabilityStatus::Active)
}

fn set_transfers(
    conn: &mut PgConnection,
    id: &str,
    status: CapabilityStatus,
) -> Result<Account, GatewayError> {
    transaction(conn, |conn| {
        change(conn, id, |stored| stored.transfers = status)?
            .map(|stored| stored.account())
            .ok_or_else(|| GatewayError::Rejected {
                message: format!("resource_missing: No such account: '{id}'"),
            })
    })
}

/// Changes the account `id` as `edit` says, in the caller's transaction,
/// announcing a change that changed something to the double that holds the
/// account, so a test control repeated sends no second event. The account
/// as it is now; `None` for no such account.
fn change(
    conn: &mut PgConnection,
    id: &str,
    edit: impl FnOnce(&mut StoredAccount),
) -> Result<Option<StoredAccount>, GatewayError> {
    let Some(mut stored) = simulated_accounts::table
        .find(id)
        .for_update()
        .select(StoredAccount::as_select())
        .first(conn)
        .optional()
        .map_err(storage)?
    else {
        return Ok(None);
    };
    let before = (stored.transfers, stored.details_submitted);
    edit(&mut stored);
    if (stored.transfers, stored.details_submitted) != before {
        diesel::update(simulated_accounts::table.find(id))
            .set((
                simulated_accounts::transfers.eq(stored.transfers),
                simulated_accounts::details_submitted.eq(stored.details_submitted),
            ))
            .execute(conn)
            .map_err(storage)?;
        events::record(
            conn,
            stored.gateway,
            "account.updated",
            ObjectKind::Account,
            id,
        )
        .map_err(storage)?;
    }
    Ok(Some(stored))
}
