//! Listing and searching PaymentIntents, as Stripe's `GET
//! /v1/payment_intents` and `GET /v1/payment_intents/search` find them: a
//! list is up to date; a search sees a new intent only once it is older
//! than the search lag, as Stripe's search index catches up.

use std::time::Duration;

use diesel::prelude::*;
use serde_json::Value;

use super::errors::storage;
use super::settings::IntentSettings;
use super::stored::StoredIntent;
use crate::schema::simulated_payment_intents::dsl as intents;
use ridepay_gateway::{GatewayError, IntentPage, ListIntents};

/// A page of the double's intents created since `request.created_gte`,
/// newest first.
pub fn list(
    conn: &mut PgConnection,
    request: &ListIntents,
    settings: &IntentSettings,
) -> Result<IntentPage, GatewayError> {
    let mut query = intents::simulated_payment_intents
        .filter(intents::gateway.eq(settings.double))
        .filter(intents::created_at.ge(request.created_gte))
        .into_boxed();
    if let Some(customer) = &request.customer {
        query = query.filter(intents::customer.eq(customer));
    }
    if let Some(after) = &request.starting_after {
        let created = intents::simulated_payment_intents
            .find(after)
            .select(intents::created_at)
            .first::<chrono::DateTime<chrono::Utc>>(conn)
            .optional()
            .map_err(storage)?
            .ok_or_else(|| GatewayError::Rejected {
                message: format!("resource_missing: No such payment_intent: '{after}'"),
            })?;
        query = query.filter(
            intents::created_at
                .lt(created)
                .or(intents::created_at.eq(created).and(intents::id.lt(after))),
        );
    }
    let limit = request.limit.clamp(1, ListIntents::MAX_LIMIT);
    let stored = query
        .order((intents::created_at.desc(), intents::id.desc()))
        .limit(i64::from(limit) + 1)
        .select(StoredIntent::as_select())
        .load(conn)
        .map_err(storage)?;
    Ok(page(stored, usize::from(limit), settings))
}

/// The double's intents whose metadata has every pair, once older than
/// `lag`: newest first, at most a page.
pub fn search(
    conn: &mut PgConnection,
    metadata: &[(&str, &str)],
    lag: Duration,
    settings: &IntentSettings,
) -> Result<IntentPage, GatewayError> {
    let wanted: serde_json::Map<String, Value> = metadata
        .iter()
        .map(|(name, value)| ((*name).to_owned(), Value::from(*value)))
        .collect();
    // The doubles time their intents by this machine's clock (`clock.rs`).
    let indexed_before = chrono::Utc::now() - chrono::Duration::from_std(lag).unwrap_or_default();
    let limit = usize::from(ListIntents::MAX_LIMIT);
    let stored = intents::simulated_payment_intents
        .filter(intents::gateway.eq(settings.double))
        .filter(intents::metadata.contains(Value::Object(wanted)))
        .filter(intents::created_at.le(indexed_before))
        .order((intents::created_at.desc(), intents::id.desc()))
        .limit(limit as i64 + 1)
        .select(StoredIntent::as_select())
        .load(conn)
        .map_err(storage)?;
    Ok(page(stored, limit, settings))
}

fn page(mut stored: Vec<StoredIntent>, limit: usize, settings: &IntentSettings) -> IntentPage {
    let has_more = stored.len() > limit;
    stored.truncate(limit);
    IntentPage {
        intents: stored
            .iter()
            .map(|intent| intent.intent(settings))
            .collect(),
        has_more,
    }
}
