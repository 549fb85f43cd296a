//! What the driver's onboarding pages do, behind their token: `open` makes
//! the gateway's account link (a single-use credential, never stored) when
//! the driver opens the start or refresh page, at most one a minute per
//! token; `returned` asks the gateway how the account stands when the
//! driver comes back, trusting nothing the browser brought.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::dsl::now;
use diesel::prelude::*;

use super::model::{self, token_hash, Driver};
use crate::context::ServiceContext;
use crate::payments;
use crate::schema::drivers;
use crate::service_error::ServiceError;
use ridepay_gateway::{AccountLink, CreateAccountLink};

/// How often a token may make an account link (the claim's SQL says the
/// same).
pub const LINK_INTERVAL: Duration = Duration::from_secs(60);

/// The pages a token opens, under `DriverContext::pages`.
pub const START: &str = "start";
pub const REFRESH: &str = "refresh";
pub const RETURN: &str = "return";

/// What opening the start (or refresh) page came to.
pub enum Opened {
    /// Where to send the driver.
    Link(AccountLink),
    /// The token made a link less than `LINK_INTERVAL` ago.
    TooSoon(Duration),
}

/// Whether `token` is one a page could have been given: 128 bits in hex.
pub fn is_token(token: &str) -> bool {
    token.len() == 32
        && token
            .bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

/// The account link for the driver whose token `token` is; `None` for a
/// token that is unknown, ended or expired.
pub fn open(cx: &ServiceContext, token: &str) -> Result<Option<Opened>, ServiceError> {
    let hash = token_hash(token);
    let claimed = {
        let mut conn = cx.pool.get()?;
        // By the database's clock, which every instance shares.
        let turn_ended = diesel::dsl::sql::<
            diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>,
        >("now() - interval '1 minute'");
        let made_at = drivers::onboarding_link_made_at;
        let claimed: Option<(String, Option<DateTime<Utc>>)> = diesel::update(
            drivers::table
                .filter(drivers::onboarding_token_hash.eq(&hash))
                .filter(drivers::onboarding_token_expires_at.gt(now))
                .filter(made_at.is_null().or(made_at.le(turn_ended))),
        )
        .set(drivers::onboarding_link_made_at.eq(now))
        .returning((drivers::account_id, drivers::onboarding_link_made_at))
        .get_result(&mut conn)
        .optional()?;
        match claimed {
            Some(claimed) => claimed,
            None => {
                let made: Option<Option<DateTime<Utc>>> = valid(&hash)
                    .select(drivers::onboarding_link_made_at)
                    .first(&mut conn)
                    .optional()?;
                return Ok(made.map(|made| Opened::TooSoon(wait_after(made))));
            }
        }
    };
    let (account, made_at) = claimed;
    let pages = &cx.drivers.pages;
    let link = cx
        .gateway
        .create_account_link(&CreateAccountLink {
            idempotency_key: link_key(&hash, made_at.unwrap_or_default()),
            account,
            refresh_url: page_url(pages, token, REFRESH),
            return_url: page_url(pages, token, RETURN),
        })
        .map_err(payments::unavailable)?;
    Ok(Some(Opened::Link(link)))
}

/// The driver whose token `token` is, with the status the gateway gives
/// their account now; `None` for a token that is unknown, ended or expired.
pub fn returned(cx: &ServiceContext, token: &str) -> Result<Option<Driver>, ServiceError> {
    let hash = token_hash(token);
    let account: Option<String> = valid(&hash)
        .select(drivers::account_id)
        .first(&mut *cx.pool.get()?)
        .optional()?;
    let Some(account) = account else {
        return Ok(None);
    };
    // No connection is held while the gateway works.
    let Some(account) = cx
        .gateway
        .retrieve_account(&account)
        .map_err(payments::unavailable)?
    else {
        return Err(anyhow::anyhow!("the gateway holds no account {account}").into());
    };
    Ok(model::learn_status(
        &mut *cx.pool.get()?,
        &account.id,
        account.can_be_paid(),
    )?)
}

/// The driver whose token hashes to `hash`, while it is good.
fn valid(hash: &[u8]) -> drivers::BoxedQuery<'_, diesel::pg::Pg> {
    drivers::table
        .filter(drivers::onboarding_token_hash.eq(hash))
        .filter(drivers::onboarding_token_expires_at.gt(now))
        .into_boxed()
}

fn wait_after(made: Option<DateTime<Utc>>) -> Duration {
    let since = made.map_or(LINK_INTERVAL, |made| {
        (Utc::now() - made).to_std().unwrap_or_default()
    });
    LINK_INTERVAL
        .saturating_sub(since)
        .max(Duration::from_secs(1))
}

/// The link's gateway key, derived from the token and the moment the page
/// took its turn to make one: one call per turn.
fn link_key(hash: &[u8], turn: DateTime<Utc>) -> String {
    format!(
        "ridepay-account-link-{}-{}",
        hex::encode(&hash[..16]),
        turn.timestamp_micros()
    )
}

/// The URL of the token's `page`, under `pages` (`DriverContext::pages`).
pub fn page_url(pages: &str, token: &str, page: &str) -> String {
    format!("{pages}/{token}/{page}")
}
