//! Connect events (`POST /webhooks/stripe/connect`): what the gateway says
//! about drivers' connected accounts. Recorded once per event id like every
//! event; `account.updated` and `capability.updated` lead to the account
//! fetched from the gateway, whose `transfers` capability sets the driver's
//! status. The payload is never trusted, and an event of the other mode
//! (live or test) than the API key's is not ridepay's to act on.

use diesel::prelude::*;

use super::apply::record_only;
use super::event::{self, Disposition, Event, Subject};
use crate::context::ServiceContext;
use crate::drivers::model;
use crate::service_error::ServiceError;

/// Records the event once and applies it. No connection is held while the
/// gateway is asked.
pub fn process(context: &ServiceContext, event: &Event) -> Result<Disposition, ServiceError> {
    let account = match &event.subject {
        Some(Subject::Account(id)) if event.livemode == context.drivers.livemode => Some(id),
        _ => None,
    };
    let mut conn = context.pool.get()?;
    if event::is_recorded(&mut conn, &event.id)? {
        return Ok(Disposition::Duplicate);
    }
    let Some(account) = account else {
        return Ok(record_only(&mut conn, event, Disposition::Ignored)?);
    };
    drop(conn);
    let account = context
        .gateway
        .retrieve_account(account)
        .map_err(crate::payments::unavailable)?;
    let mut conn = context.pool.get()?;
    conn.transaction(|conn| {
        if !event::record(conn, event, Disposition::Applied)? {
            return Ok(Disposition::Duplicate);
        }
        let learnt = match &account {
            Some(account) => model::learn_status(conn, &account.id, account.can_be_paid())?,
            None => None,
        };
        if learnt.is_none() {
            event::set_disposition(conn, &event.id, Disposition::Ignored)?;
            return Ok(Disposition::Ignored);
        }
        Ok(Disposition::Applied)
    })
}
