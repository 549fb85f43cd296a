//! The balance's list, as Stripe's `GET /v1/balance_transactions` gives
//! it: each captured charge's balance transaction and each refund's that
//! moved money, newest first.

use chrono::{DateTime, Utc};
use diesel::prelude::*;

use crate::balance_transactions::{of_captured, of_refund, transaction_source};
use crate::events::Double;
use crate::intents::{storage, whole_seconds};
use crate::schema::{simulated_payment_intents as intents, simulated_refunds as refunds};
use ridepay_gateway::{
    BalanceTransaction, BalanceTransactionPage, GatewayError, ListBalanceTransactions, ListIntents,
    ListedBalanceTransaction, RefundState,
};

/// A balance transaction listed, with when it was made to the microsecond,
/// by which the list is ordered.
struct Made {
    at: DateTime<Utc>,
    listed: ListedBalanceTransaction,
}

impl Made {
    fn new(kind: &str, source: String, at: DateTime<Utc>, transaction: BalanceTransaction) -> Made {
        Made {
            at,
            listed: ListedBalanceTransaction {
                kind: kind.to_owned(),
                source: Some(source),
                created: whole_seconds(at),
                transaction,
            },
        }
    }

    /// Newest first, then by id, as the list gives them.
    fn order(&self) -> (DateTime<Utc>, &str) {
        (self.at, &self.listed.transaction.id)
    }
}

/// A page of the double's balance transactions since
/// `request.created_gte`, newest first: one for each captured charge (less
/// its fee) and one for each refund that moved money (`pending` or
/// `succeeded`: its amount and net negative, no fee). The charges made
/// through the Charges API, before PaymentIntents, are not among them.
pub fn list(
    conn: &mut PgConnection,
    request: &ListBalanceTransactions,
    double: Double,
) -> Result<BalanceTransactionPage, GatewayError> {
    let limit = request.limit.clamp(1, ListIntents::MAX_LIMIT);
    let after = match &request.starting_after {
        Some(id) => Some((made_at(conn, id, double)?, id.as_str())),
        None => None,
    };
    let since = request.created_gte.unwrap_or(DateTime::UNIX_EPOCH);
    let page = Page {
        since,
        after,
        source: request.source.as_deref(),
        limit,
    };
    let mut made = charges(conn, &page, double).map_err(storage)?;
    made.extend(refunds(conn, &page, double).map_err(storage)?);
    made.sort_by(|a, b| b.order().cmp(&a.order()));
    let has_more = made.len() > usize::from(limit);
    made.truncate(usize::from(limit));
    Ok(BalanceTransactionPage {
        transactions: made.into_iter().map(|made| made.listed).collect(),
        has_more,
    })
}

/// When the balance transaction `id` was made: its charge's capture or its
/// refund's creation.
fn made_at(
    conn: &mut PgConnection,
    id: &str,
    double: Double,
) -> Result<DateTime<Utc>, GatewayError> {
    let missing = || GatewayError::Rejected {
        message: format!("resource_missing: No such balance transaction: '{id}'"),
    };
    let source = transaction_source(id).ok_or_else(missing)?;
    let made = if source.starts_with("re_") {
        refunds::table
            .filter(refunds::gateway.eq(double))
            .filter(refunds::id.eq(source))
            .select(refunds::created_at)
            .first(conn)
            .optional()
    } else {
        intents::table
            .filter(intents::gateway.eq(double))
            .filter(intents::latest_charge.eq(format!("ch_{source}")))
            .filter(intents::captured_at.is_not_null())
            .select(intents::captured_at.assume_not_null())
            .first(conn)
            .optional()
    };
    made.map_err(storage)?.ok_or_else(missing)
}

/// A captured charge or a refund, as its balance transaction is made of
/// it: the amount it moved, in its currency, when, and the payment method
/// that paid it (none for a refund of a charge made before
/// PaymentIntents).
#[derive(Queryable)]
struct Moving {
    id: String,
    cents: i64,
    currency: String,
    payment_method: Option<String>,
    at: DateTime<Utc>,
}

/// Which balance transactions a page holds: those made since `since`,
/// after `after` (when it was made, and its id), of `source` when it is
/// given; `limit` of them, newest first.
struct Page<'a> {
    since: DateTime<Utc>,
    after: Option<(DateTime<Utc>, &'a str)>,
    source: Option<&'a str>,
    limit: u8,
}

/// The captured charges' balance transactions on `page`, and one more.
fn charges(conn: &mut PgConnection, page: &Page, double: Double) -> QueryResult<Vec<Made>> {
    let mut query = intents::table
        .filter(intents::gateway.eq(double))
        .filter(intents::captured_at.ge(page.since))
        .into_boxed();
    if let Some(charge) = page.source {
        query = query.filter(intents::latest_charge.eq(charge));
    }
    if let Some((at, id)) = page.after {
        // Ordered as their balance transactions' ids are.
        let charge = format!("ch_{}", transaction_source(id).unwrap_or(id));
        query = query.filter(
            intents::captured_at.lt(at).or(intents::captured_at
                .eq(at)
                .and(intents::latest_charge.lt(charge))),
        );
    }
    // A captured intent has its charge (`captured_at` is set with it).
    let rows: Vec<Moving> = query
        .order((intents::captured_at.desc(), intents::latest_charge.desc()))
        .limit(i64::from(page.limit) + 1)
        .select((
            intents::latest_charge.assume_not_null(),
            intents::amount_received_cents,
            intents::currency,
            intents::payment_method.nullable(),
            intents::captured_at.assume_not_null(),
        ))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|charge| {
            let payment_method = charge.payment_method.unwrap_or_default();
            let transaction =
                of_captured(&charge.id, charge.cents, &charge.currency, &payment_method);
            Made::new("charge", charge.id, charge.at, transaction)
        })
        .collect())
}

/// The balance transactions of the refunds that moved money on `page`,
/// and one more.
fn refunds(conn: &mut PgConnection, page: &Page, double: Double) -> QueryResult<Vec<Made>> {
    let mut query = refunds::table
        .left_join(intents::table)
        .filter(refunds::gateway.eq(double))
        .filter(refunds::status.eq_any([RefundState::Pending, RefundState::Succeeded]))
        .filter(refunds::created_at.ge(page.since))
        .into_boxed();
    if let Some(refund) = page.source {
        query = query.filter(refunds::id.eq(refund));
    }
    if let Some((at, id)) = page.after {
        let refund = transaction_source(id).unwrap_or(id).to_owned();
        query = query.filter(
            refunds::created_at
                .lt(at)
                .or(refunds::created_at.eq(at).and(refunds::id.lt(refund))),
        );
    }
    let rows: Vec<Moving> = query
        .order((refunds::created_at.desc(), refunds::id.desc()))
        .limit(i64::from(page.limit) + 1)
        .select((
            refunds::id,
            refunds::amount_cents,
            refunds::currency,
            intents::payment_method.nullable(),
            refunds::created_at,
        ))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|refund| {
            let transaction = of_refund(
                &refund.id,
                refund.cents,
                &refund.currency,
                refund.payment_method.as_deref(),
            );
            Made::new("refund", refund.id, refund.at, transaction)
        })
        .collect())
}
