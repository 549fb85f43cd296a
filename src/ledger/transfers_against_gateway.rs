//! Each driver's transfers against the gateway's, per currency: what the
//! ledger posted as transfers less reversals on the driver's payable, and
//! as stray transfers less their reversals (`platform:suspense`, through
//! the stray's tombstone), is what the gateway's transfers to the driver's
//! account carrying this installation's metadata come to, each its amount
//! less what was reversed of it. Read after the ledger, the gateway may
//! show what ridepay is recording just then: a transfer whose key a row
//! not recorded yet carries (the worker records it), and a reversal of the
//! last minute the ledger has not posted, are left out.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bytea, Text};
use uuid::Uuid;

use super::check::{Report, Violation};
use crate::drivers::transfer_keys::unrecorded_keys;
use crate::payments::lookup::patiently;
use crate::payments::{
    ListTransfers, PaymentGateway, Transfer, TransferReversal, INSTALLATION, RIDEPAY_KEY,
};
use crate::public_ids::DriverPublicId;
use crate::schema::{drivers, installation, ledger_transactions, stray_transfers};
use crate::service_error::ServiceError;

/// How long a reversal the ledger has not posted may be one being
/// recorded: longer than a gateway call takes.
const RECORDING: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

/// The gateway's clock may run behind the database's.
const CLOCK_MARGIN: chrono::TimeDelta = chrono::TimeDelta::minutes(5);

/// Compares every driver's transfers since the ledger's start (a sum over
/// a shorter span would cut a transfer from its reversals), adding what
/// disagrees to `report` as `driver_disagrees`.
pub fn compare(
    conn: &mut PgConnection,
    gateway: &dyn PaymentGateway,
    report: &mut Report,
) -> Result<(), ServiceError> {
    let (installation_id, started): (Uuid, DateTime<Utc>) = installation::table
        .select((
            installation::installation_id,
            installation::ledger_started_at,
        ))
        .first(conn)?;
    let read_at = crate::db::now(conn)?;
    let mut ledger = posted(conn)?;
    let payees: Vec<(i64, DriverPublicId, String)> = drivers::table
        .order(drivers::id)
        .select((drivers::id, drivers::public_id, drivers::account_id))
        .load(conn)?;
    for (driver_id, driver, account_id) in payees {
        let adopting = unrecorded_keys(conn, installation_id, driver_id)?;
        let strays: HashSet<String> = stray_transfers::table
            .filter(stray_transfers::driver_id.eq(driver_id))
            .select(stray_transfers::transfer_id)
            .load::<String>(conn)?
            .into_iter()
            .collect();
        let mut at_gateway: BTreeMap<String, i64> = BTreeMap::new();
        let mut request = Some(ListTransfers::to_since(&account_id, started - CLOCK_MARGIN));
        while let Some(listing) = request {
            let page = patiently(|| gateway.list_transfers(&listing))?;
            request = listing.after(&page);
            for transfer in &page.transfers {
                if transfer.metadata.get(INSTALLATION) != Some(&installation_id.to_string()) {
                    continue;
                }
                let worker_records_it = transfer
                    .metadata
                    .get(RIDEPAY_KEY)
                    .is_some_and(|key| adopting.contains(key))
                    && !strays.contains(&transfer.id);
                if !worker_records_it {
                    *at_gateway.entry(transfer.currency.clone()).or_default() +=
                        settled(conn, transfer, read_at)?;
                }
            }
        }
        let posted = ledger.remove(&driver).unwrap_or_default();
        let currencies: BTreeSet<&String> = at_gateway.keys().chain(posted.keys()).collect();
        for currency in currencies {
            let gateway_cents = at_gateway.get(currency).copied().unwrap_or_default();
            let ledger_cents = posted.get(currency).copied().unwrap_or_default();
            if gateway_cents != ledger_cents {
                report.violations.push(Violation {
                    invariant: "driver_disagrees",
                    subject: format!("{driver}:{currency}"),
                    detail: format!(
                        "the gateway's transfers to {account_id} less their reversals come to \
                         {gateway_cents} {currency}, the ledger's transfers to the driver less \
                         reversals, strays included, {ledger_cents}"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// What `transfer` moved to the driver less what came back, but for its
/// reversals of the last minute (newest first in its list) that the ledger
/// has not posted yet.
fn settled(
    conn: &mut PgConnection,
    transfer: &Transfer,
    read_at: DateTime<Utc>,
) -> QueryResult<i64> {
    let recent: Vec<&TransferReversal> = transfer
        .reversals
        .iter()
        .filter(|reversal| reversal.created > read_at - RECORDING)
        .collect();
    let mut unposted = 0;
    for reversal in recent {
        let sources = ["reversal", "stray_reversal"].map(|what| format!("{}:{what}", reversal.id));
        let posted: bool = diesel::select(diesel::dsl::exists(
            ledger_transactions::table.filter(ledger_transactions::source.eq_any(sources)),
        ))
        .get_result(conn)?;
        if !posted {
            unposted += reversal.amount_cents;
        }
    }
    Ok(transfer.reversible_cents() + unposted)
}

/// Per driver and currency, transfers less reversals as the ledger posted
/// them: on the driver's payable, and stray ones on `platform:suspense`.
fn posted(conn: &mut PgConnection) -> QueryResult<HashMap<DriverPublicId, BTreeMap<String, i64>>> {
    #[derive(QueryableByName)]
    struct Posted {
        #[diesel(sql_type = Bytea)]
        driver: DriverPublicId,
        #[diesel(sql_type = Text)]
        currency: String,
        #[diesel(sql_type = BigInt)]
        amount: i64,
    }
    let rows: Vec<Posted> = diesel::sql_query(
        "SELECT d.public_id AS driver, moved.currency, sum(moved.amount)::bigint AS amount
         FROM drivers AS d
         CROSS JOIN LATERAL (
             SELECT a.currency, e.amount_cents AS amount
             FROM ledger_accounts AS a
             JOIN ledger_entries AS e ON e.account_id = a.id
             JOIN ledger_transactions AS t ON t.id = e.transaction_id
             WHERE a.code = d.payable_code || ':' || a.currency AND t.kind = ANY($1)
             UNION ALL
             SELECT a.currency, e.amount_cents
             FROM stray_transfers AS s
             JOIN ledger_transactions AS t
               ON t.source IN (s.transfer_id || ':stray_transfer',
                               s.reversal_id || ':stray_reversal')
             JOIN ledger_entries AS e ON e.transaction_id = t.id
             JOIN ledger_accounts AS a ON a.id = e.account_id AND a.kind = 'suspense'
             WHERE s.driver_id = d.id) AS moved
         GROUP BY d.public_id, moved.currency",
    )
    .bind::<Array<Text>, _>(&TRANSFER_KINDS[..])
    .load(conn)?;
    let mut posted: HashMap<DriverPublicId, BTreeMap<String, i64>> = HashMap::new();
    for row in rows {
        posted
            .entry(row.driver)
            .or_default()
            .insert(row.currency, row.amount);
    }
    Ok(posted)
}

/// The kinds that move money between a driver's payable and the gateway:
/// a transfer made, and a reversal of one.
const TRANSFER_KINDS: [&str; 2] = ["transfer", "transfer_reversal"];
