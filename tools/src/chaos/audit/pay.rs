//! The checks of the drivers' pay: every charge of an assigned ride owed
//! one transfer of the driver's entitlement (computed here from the fare,
//! the tip, the refunds and the commission, as DESIGN §13 defines it) less
//! what netting kept back, every transfer and reversal ridepay records made
//! at the gateway exactly once and nothing else made there, every refund of
//! a charge whose transfer was made either reversed or left as the driver's
//! debt, and each driver's payable in the ledger what their entitlements,
//! less what the gateway moved to them, leave.

use std::collections::{BTreeMap, HashMap, HashSet};

use diesel::sql_types::{BigInt, Integer, Nullable, Text, Timestamptz};
use diesel::{PgConnection, QueryableByName, RunQueryDsl};

use super::records::{GatewayRecords, UNDONE_REFUNDS};
use super::report::{AuditReport, PayCounts, CHECKS};

/// Which of a ride's payments money is of: the fare's PaymentIntent (which
/// a refund of the ride's own payment may not name), or the tip's own.
#[derive(QueryableByName, Clone, PartialEq, Eq)]
pub(crate) struct RidePayment {
    #[diesel(sql_type = BigInt)]
    pub(crate) ride_id: i64,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) intent: Option<String>,
}

/// A charge of an assigned ride, with what the driver's entitlement to it
/// depends on, and what its reallocation posted when its transfer was owed.
#[derive(QueryableByName, Clone)]
pub(crate) struct ChargeRow {
    #[diesel(sql_type = Text)]
    pub(crate) id: String,
    #[diesel(embed)]
    pub(crate) payment: RidePayment,
    #[diesel(sql_type = BigInt)]
    pub(crate) amount_cents: i64,
    /// The ride's tip, and the tip's own PaymentIntent if it has one.
    #[diesel(sql_type = BigInt)]
    pub(crate) tip_cents: i64,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) tip_intent: Option<String>,
    #[diesel(sql_type = Integer)]
    pub(crate) commission_bps: i32,
    #[diesel(sql_type = BigInt)]
    pub(crate) driver_id: i64,
    /// What the reallocation left unassigned (the charge less the refunds
    /// before it), and what it credited the driver's payable.
    #[diesel(sql_type = BigInt)]
    pub(crate) kept_cents: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) reallocated_cents: i64,
}

impl ChargeRow {
    /// The driver's share of it had `refunded` been refunded of it.
    pub(crate) fn entitlement(&self, refunded: i64) -> i64 {
        let intent = &self.payment.intent;
        let is_tip = intent.is_some() && *intent == self.tip_intent;
        let tip = match (&self.tip_intent, is_tip) {
            (_, true) => self.amount_cents,
            (None, false) => self.tip_cents,
            (Some(_), false) => 0,
        };
        let fare = self.amount_cents - tip;
        let bps = i64::from(self.commission_bps);
        let share = fare - fare * bps / 10_000;
        let fare_back = match fare {
            0 => 0,
            _ => refunded.min(fare) * share / fare,
        };
        share - fare_back + tip - (refunded - fare).max(0)
    }
}

/// A refund part of an assigned ride that counts (not failed or
/// cancelled), with what its posting took from the driver's payable.
#[derive(QueryableByName, Clone)]
pub(crate) struct RefundPart {
    #[diesel(sql_type = BigInt)]
    pub(crate) id: i64,
    #[diesel(embed)]
    pub(crate) payment: RidePayment,
    #[diesel(sql_type = BigInt)]
    pub(crate) amount_cents: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) taken_cents: i64,
    /// Its posting's transaction, which orders it against transfers made.
    #[diesel(sql_type = Nullable<BigInt>)]
    pub(crate) posting_id: Option<i64>,
}

#[derive(QueryableByName, Clone)]
pub(crate) struct TransferRow {
    #[diesel(sql_type = BigInt)]
    pub(crate) id: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) driver_id: i64,
    /// The driver's account it goes to.
    #[diesel(sql_type = Text)]
    pub(crate) account: String,
    #[diesel(sql_type = Text)]
    pub(crate) source_charge: String,
    #[diesel(sql_type = BigInt)]
    pub(crate) entitled_cents: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) amount_cents: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) netted_cents: i64,
    #[diesel(sql_type = Text)]
    pub(crate) status: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) gateway_id: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub(crate) amount_reversed_cents: i64,
    /// Owed again for a reversal whose refund failed; else the original.
    #[diesel(sql_type = Nullable<BigInt>)]
    pub(crate) reowes: Option<i64>,
    /// The posting of it made.
    #[diesel(sql_type = Nullable<BigInt>)]
    pub(crate) posting_id: Option<i64>,
}

#[derive(QueryableByName, Clone)]
pub(crate) struct ReversalRow {
    #[diesel(sql_type = BigInt)]
    pub(crate) transfer_id: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) refund_id: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) amount_cents: i64,
    #[diesel(sql_type = Text)]
    pub(crate) status: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) gateway_id: Option<String>,
}

/// A transfer or a reversal the gateway made for this installation.
#[derive(QueryableByName, Clone)]
pub(crate) struct GatewayMove {
    #[diesel(sql_type = Text)]
    pub(crate) id: String,
    #[diesel(sql_type = BigInt)]
    pub(crate) amount_cents: i64,
    /// The destination account of a transfer; a reversal's transfer.
    #[diesel(sql_type = Text)]
    pub(crate) to: String,
    /// A transfer's source charge; empty for a reversal.
    #[diesel(sql_type = Text)]
    pub(crate) source: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) ridepay_key: Option<String>,
}

#[derive(QueryableByName)]
struct Installation {
    #[diesel(sql_type = Text)]
    id: String,
}

/// A driver's payable accounts' balance in the ledger.
#[derive(QueryableByName, Clone)]
pub(crate) struct Payable {
    #[diesel(sql_type = BigInt)]
    pub(crate) driver_id: i64,
    #[diesel(sql_type = Text)]
    pub(crate) account: String,
    #[diesel(sql_type = BigInt)]
    pub(crate) balance_cents: i64,
}

/// What the checks of the drivers' pay read.
#[derive(Default, Clone)]
pub(crate) struct PayRecords {
    pub(crate) charges: Vec<ChargeRow>,
    pub(crate) refunds: Vec<RefundPart>,
    pub(crate) transfers: Vec<TransferRow>,
    pub(crate) reversals: Vec<ReversalRow>,
    pub(crate) gateway_transfers: Vec<GatewayMove>,
    pub(crate) gateway_reversals: Vec<GatewayMove>,
    pub(crate) payables: Vec<Payable>,
}

impl PayRecords {
    /// The pay of `user_id`'s rides, and what the gateway made for this
    /// installation since `started`.
    pub(crate) fn read(
        conn: &mut PgConnection,
        gateway_records: &mut GatewayRecords,
        user_id: i64,
        started: chrono::DateTime<chrono::Utc>,
    ) -> anyhow::Result<PayRecords> {
        let charges: Vec<ChargeRow> = diesel::sql_query(
            "SELECT c.id, c.ride_id, coalesce(c.payment_intent_id, r.payment_intent_id) AS intent, \
             c.amount_cents, r.tip_cents, r.tip_payment_intent_id AS tip_intent, a.commission_bps, \
             a.driver_id, \
             coalesce(sum(e.amount_cents) FILTER (WHERE starts_with(acc.code, 'platform:unassigned:')), \
                      0)::bigint AS kept_cents, \
             coalesce(-sum(e.amount_cents) \
                      FILTER (WHERE acc.code = d.payable_code || ':' || c.currency), 0)::bigint \
                 AS reallocated_cents \
             FROM charges c JOIN rides r ON r.id = c.ride_id \
             JOIN ride_drivers a ON a.ride_id = r.id JOIN drivers d ON d.id = a.driver_id \
             LEFT JOIN ledger_transactions t ON t.source = c.id || ':reallocation' \
             LEFT JOIN ledger_entries e ON e.transaction_id = t.id \
             LEFT JOIN ledger_accounts acc ON acc.id = e.account_id \
             WHERE r.user_id = $1 GROUP BY c.id, r.id, a.ride_id, d.id",
        )
        .bind::<BigInt, _>(user_id)
        .load(conn)?;
        let refunds = diesel::sql_query(format!(
            "SELECT f.id, f.ride_id, coalesce(f.payment_intent_id, r.payment_intent_id) AS intent, \
             f.amount_cents, t.id AS posting_id, \
             coalesce((SELECT sum(e.amount_cents) FROM ledger_entries e \
                       JOIN ledger_accounts acc ON acc.id = e.account_id \
                       WHERE e.transaction_id = t.id \
                         AND acc.code = d.payable_code || ':' || f.currency), 0)::bigint \
                 AS taken_cents \
             FROM refunds f JOIN rides r ON r.id = f.ride_id \
             JOIN ride_drivers a ON a.ride_id = r.id JOIN drivers d ON d.id = a.driver_id \
             LEFT JOIN ledger_transactions t ON t.source = f.gateway_refund_id || ':refund' \
             WHERE r.user_id = $1 AND f.status NOT IN {UNDONE_REFUNDS}"
        ))
        .bind::<BigInt, _>(user_id)
        .load(conn)?;
        let transfers = diesel::sql_query(
            "SELECT t.id, t.driver_id, d.account_id AS account, t.source_charge, t.entitled_cents, \
             t.amount_cents, t.netted_cents, t.status, t.gateway_transfer_id AS gateway_id, \
             t.amount_reversed_cents, t.reowes_reversal_id AS reowes, \
             (SELECT p.id FROM ledger_transactions p \
              WHERE p.source = t.gateway_transfer_id || ':transfer') AS posting_id \
             FROM transfers t JOIN rides r ON r.id = t.ride_id JOIN drivers d ON d.id = t.driver_id \
             WHERE r.user_id = $1",
        )
        .bind::<BigInt, _>(user_id)
        .load(conn)?;
        let reversals = diesel::sql_query(
            "SELECT v.transfer_id, v.refund_id, v.amount_cents, v.status, \
             v.gateway_reversal_id AS gateway_id \
             FROM transfer_reversals v JOIN transfers t ON t.id = v.transfer_id \
             JOIN rides r ON r.id = t.ride_id WHERE r.user_id = $1",
        )
        .bind::<BigInt, _>(user_id)
        .load(conn)?;
        let payables = diesel::sql_query(
            "SELECT d.id AS driver_id, d.account_id AS account, \
             coalesce(sum(e.amount_cents), 0)::bigint AS balance_cents \
             FROM drivers d JOIN ledger_accounts acc ON starts_with(acc.code, d.payable_code || ':') \
             LEFT JOIN ledger_entries e ON e.account_id = acc.id GROUP BY d.id",
        )
        .load(conn)?;
        let installation =
            diesel::sql_query("SELECT installation_id::text AS id FROM installation")
                .get_result::<Installation>(conn)?
                .id;
        let ours = "t.gateway = $1 AND t.metadata->>'ridepay_installation' = $2 \
                    AND t.created_at >= date_trunc('second', $3)";
        let gateway_transfers = diesel::sql_query(format!(
            "SELECT t.id, t.amount_cents, t.destination AS to, t.source_transaction AS source, \
             t.metadata->>'ridepay_key' AS ridepay_key FROM simulated_transfers t WHERE {ours}"
        ))
        .bind::<Text, _>(gateway_records.gateway)
        .bind::<Text, _>(&installation)
        .bind::<Timestamptz, _>(started)
        .load(&mut gateway_records.conn)?;
        let gateway_reversals = diesel::sql_query(format!(
            "SELECT v.id, v.amount_cents, v.transfer AS to, '' AS source, \
             v.metadata->>'ridepay_key' AS ridepay_key \
             FROM simulated_transfer_reversals v JOIN simulated_transfers t ON t.id = v.transfer \
             WHERE {ours}"
        ))
        .bind::<Text, _>(gateway_records.gateway)
        .bind::<Text, _>(&installation)
        .bind::<Timestamptz, _>(started)
        .load(&mut gateway_records.conn)?;
        Ok(PayRecords {
            charges,
            refunds,
            transfers,
            reversals,
            gateway_transfers,
            gateway_reversals,
            payables,
        })
    }
}

/// Every check of the drivers' pay; the counts in `report.pay`. A run
/// that made no debt (no reversal refused, nothing netted) fails: the
/// campaign did not test what it is for.
pub(crate) fn check_pay(report: &mut AuditReport, records: &PayRecords) {
    check_owed(report, records);
    check_made(report, records);
    check_refunds(report, records);
    check_balances(report, records);
    let counts = count(records);
    if counts.left_as_debt == 0 && counts.netted == 0 {
        report.flag(
            CHECKS[31],
            format!(
                "{} charges assigned, {} reversals made: no reversal refused, nothing netted",
                counts.charges_assigned, counts.reversed
            ),
        );
    }
    report.pay = counts;
}

fn count(records: &PayRecords) -> PayCounts {
    let reversals = |status: &str| {
        let of = records.reversals.iter().filter(|r| r.status == status);
        (of.clone().count(), of.map(|r| r.amount_cents).sum())
    };
    let ((reversed, reversed_cents), (left_as_debt, debt_cents)) =
        (reversals("reversed"), reversals("failed"));
    let netting = records.transfers.iter().filter(|t| t.netted_cents > 0);
    PayCounts {
        charges_assigned: records.charges.len(),
        transfers_paid: records
            .transfers
            .iter()
            .filter(|t| t.status == "paid")
            .count(),
        transfers_owed_again: records
            .transfers
            .iter()
            .filter(|t| t.reowes.is_some())
            .count(),
        reversed,
        reversed_cents,
        left_as_debt,
        debt_cents,
        netted: netting.clone().count(),
        netted_cents: netting.map(|t| t.netted_cents).sum(),
    }
}

/// The original transfer of each charge (not one owed again).
fn originals(records: &PayRecords) -> HashMap<&str, Vec<&TransferRow>> {
    let mut by_charge: HashMap<&str, Vec<&TransferRow>> = HashMap::new();
    for transfer in records.transfers.iter().filter(|t| t.reowes.is_none()) {
        by_charge
            .entry(transfer.source_charge.as_str())
            .or_default()
            .push(transfer);
    }
    by_charge
}

/// The refund parts of each charge.
fn refunds_of<'a>(records: &'a PayRecords, charge: &ChargeRow) -> Vec<&'a RefundPart> {
    records
        .refunds
        .iter()
        .filter(|part| part.payment == charge.payment)
        .collect()
}

/// Each charge of an assigned ride: one original transfer, to its ride's
/// driver, owed the entitlement after the refunds before it (as its
/// reallocation shows them) and posted so; the refunds after it took
/// exactly what the entitlement lost; it sent that, less what netting kept
/// back and what refunds took off it before it was sent; and it ended
/// paid, or netted whole.
fn check_owed(report: &mut AuditReport, records: &PayRecords) {
    let originals = originals(records);
    for charge in &records.charges {
        let owed = originals
            .get(charge.id.as_str())
            .map_or(&[][..], Vec::as_slice);
        let [transfer] = owed else {
            report.flag(
                CHECKS[26],
                format!("charge {}: {} transfers owed", charge.id, owed.len()),
            );
            continue;
        };
        let parts = refunds_of(records, charge);
        let refunded: i64 = parts.iter().map(|part| part.amount_cents).sum();
        let taken: i64 = parts.iter().map(|part| part.taken_cents).sum();
        let entitled_then = charge.entitlement(charge.amount_cents - charge.kept_cents);
        let entitled_now = charge.entitlement(refunded);
        let reduced = transfer.entitled_cents - transfer.netted_cents - transfer.amount_cents;
        let ended = match transfer.status.as_str() {
            "paid" => transfer.gateway_id.is_some() && transfer.amount_cents > 0,
            "netted" => transfer.amount_cents == 0,
            _ => false,
        };
        let problems = [
            (transfer.driver_id != charge.driver_id, "to another driver"),
            (
                transfer.entitled_cents != entitled_then
                    || charge.reallocated_cents != entitled_then,
                "owed other than the entitlement",
            ),
            (
                taken != entitled_then - entitled_now,
                "refunds took other than the entitlement lost",
            ),
            (
                transfer.netted_cents < 0 || reduced < 0 || reduced > taken,
                "sent other than the entitlement less netting",
            ),
            (!ended, "not paid or netted"),
        ];
        for (_, problem) in problems.iter().filter(|(found, _)| *found) {
            report.flag(
                CHECKS[26],
                format!(
                    "charge {} ({} cents, {refunded} refunded, {} bps): {problem}: transfer {} \
                     {} entitled {} (entitlement {entitled_then}, now {entitled_now}, refunds \
                     took {taken}), amount {}, netted {}",
                    charge.id,
                    charge.amount_cents,
                    charge.commission_bps,
                    transfer.id,
                    transfer.status,
                    transfer.entitled_cents,
                    transfer.amount_cents,
                    transfer.netted_cents
                ),
            );
        }
    }
}

/// Each transfer and reversal ridepay records as made is the gateway's,
/// for its amount (a transfer to the driver's account from its charge, a
/// reversal of its transfer), once; the gateway made none twice (one
/// `ridepay_key`, one object) and none that ridepay does not record.
fn check_made(report: &mut AuditReport, records: &PayRecords) {
    let transfers_made: HashMap<&str, &GatewayMove> = records
        .gateway_transfers
        .iter()
        .map(|made| (made.id.as_str(), made))
        .collect();
    let reversals_made: HashMap<&str, &GatewayMove> = records
        .gateway_reversals
        .iter()
        .map(|made| (made.id.as_str(), made))
        .collect();
    let mut recorded = HashSet::new();
    for transfer in &records.transfers {
        let Some(id) = &transfer.gateway_id else {
            continue;
        };
        let made = transfers_made.get(id.as_str());
        let same = made.is_some_and(|made| {
            made.amount_cents == transfer.amount_cents
                && made.to == transfer.account
                && made.source == transfer.source_charge
        });
        let once = recorded.insert(id.as_str());
        if !same || !once {
            report.flag(
                CHECKS[27],
                format!(
                    "transfer {} records {id} ({} cents to {} from {}); the gateway's: {:?}",
                    transfer.id,
                    transfer.amount_cents,
                    transfer.account,
                    transfer.source_charge,
                    made.map(|made| (made.amount_cents, &made.to, &made.source))
                ),
            );
        }
    }
    let gateway_id_of: HashMap<i64, &str> = records
        .transfers
        .iter()
        .filter_map(|t| Some((t.id, t.gateway_id.as_deref()?)))
        .collect();
    for reversal in &records.reversals {
        let Some(id) = &reversal.gateway_id else {
            continue;
        };
        let made = reversals_made.get(id.as_str());
        let same = made.is_some_and(|made| {
            made.amount_cents == reversal.amount_cents
                && gateway_id_of.get(&reversal.transfer_id) == Some(&made.to.as_str())
        });
        let once = recorded.insert(id.as_str());
        if !same || !once {
            report.flag(
                CHECKS[28],
                format!(
                    "reversal of refund {} records {id} ({} cents); the gateway's: {:?}",
                    reversal.refund_id,
                    reversal.amount_cents,
                    made.map(|made| (made.amount_cents, &made.to))
                ),
            );
        }
    }
    for (moves, check) in [
        (&records.gateway_transfers, CHECKS[27]),
        (&records.gateway_reversals, CHECKS[28]),
    ] {
        let mut per_key: BTreeMap<&str, usize> = BTreeMap::new();
        for made in moves.iter() {
            *per_key
                .entry(made.ridepay_key.as_deref().unwrap_or_default())
                .or_default() += 1;
            if !recorded.contains(made.id.as_str()) {
                report.flag(
                    check,
                    format!(
                        "{} ({} cents, {}) made at the gateway, recorded by no row",
                        made.id, made.amount_cents, made.to
                    ),
                );
            }
        }
        for (key, count) in per_key.into_iter().filter(|(_, count)| *count > 1) {
            report.flag(check, format!("ridepay_key {key:?}: {count} made"));
        }
    }
}

/// Each refund part that took from the driver's share of a charge whose
/// transfer was made before it (in the order the ledger posted them): a
/// reversal of what it took, at most what the transfer had left after the
/// reversals owed before it, reversed or refused (left as the driver's
/// debt), not owed still; and no reversal where it could take nothing. One
/// posted before the transfer was made owes none: what it took came off
/// the transfer's amount, or stays as debt. A transfer's reversed amount is
/// what its reversals made add up to.
fn check_refunds(report: &mut AuditReport, records: &PayRecords) {
    let originals = originals(records);
    let reversal_of: HashMap<i64, &ReversalRow> = records
        .reversals
        .iter()
        .map(|reversal| (reversal.refund_id, reversal))
        .collect();
    for charge in &records.charges {
        let Some([transfer]) = originals.get(charge.id.as_str()).map(Vec::as_slice) else {
            continue;
        };
        let mut parts = refunds_of(records, charge);
        parts.sort_by_key(|part| part.posting_id);
        let mut left = transfer.amount_cents;
        for part in parts {
            let reversal = reversal_of.get(&part.id);
            let after_made = transfer
                .posting_id
                .zip(part.posting_id)
                .is_some_and(|(made, posted)| posted > made);
            let owed = match after_made {
                true => part.taken_cents.min(left).max(0),
                false => 0,
            };
            let problem = match reversal {
                None if owed > 0 => Some("no reversal of a transfer made"),
                None => None,
                Some(r) if r.amount_cents != owed => Some("a reversal of other than it could take"),
                Some(r) if !["reversed", "failed"].contains(&r.status.as_str()) => {
                    Some("a reversal neither made nor refused")
                }
                Some(_) => None,
            };
            if let Some(problem) = problem {
                report.flag(
                    CHECKS[29],
                    format!(
                        "refund part {} ({} cents, took {}) of charge {}, transfer {} with {left} \
                         left: {problem}: {:?}",
                        part.id,
                        part.amount_cents,
                        part.taken_cents,
                        charge.id,
                        transfer.id,
                        reversal.map(|r| (&r.status, r.amount_cents))
                    ),
                );
            }
            if let Some(r) =
                reversal.filter(|r| ["pending", "reversed"].contains(&r.status.as_str()))
            {
                left -= r.amount_cents;
            }
        }
        let reversed: i64 = records
            .reversals
            .iter()
            .filter(|r| r.transfer_id == transfer.id && r.status == "reversed")
            .map(|r| r.amount_cents)
            .sum();
        if transfer.amount_reversed_cents != reversed {
            report.flag(
                CHECKS[29],
                format!(
                    "transfer {} shows {} reversed, its reversals made {reversed}",
                    transfer.id, transfer.amount_reversed_cents
                ),
            );
        }
    }
}

/// Each driver's payable in the ledger: their entitlements now (after
/// every refund), less what the gateway transferred to them, plus what it
/// reversed; and at most 0 once settled (nothing left unpaid: what remains
/// is their debt).
fn check_balances(report: &mut AuditReport, records: &PayRecords) {
    let mut owed: BTreeMap<i64, i64> = BTreeMap::new();
    for charge in &records.charges {
        let refunded = refunds_of(records, charge)
            .iter()
            .map(|part| part.amount_cents)
            .sum();
        *owed.entry(charge.driver_id).or_default() += charge.entitlement(refunded);
    }
    let account_of: HashMap<i64, &Payable> = records
        .payables
        .iter()
        .map(|payable| (payable.driver_id, payable))
        .collect();
    let transfer_to: HashMap<&str, &str> = records
        .gateway_transfers
        .iter()
        .map(|made| (made.id.as_str(), made.to.as_str()))
        .collect();
    for (driver, entitled) in owed {
        let Some(payable) = account_of.get(&driver) else {
            report.flag(CHECKS[30], format!("driver {driver}: no payable account"));
            continue;
        };
        let transferred: i64 = records
            .gateway_transfers
            .iter()
            .filter(|made| made.to == payable.account)
            .map(|made| made.amount_cents)
            .sum();
        let reversed: i64 = records
            .gateway_reversals
            .iter()
            .filter(|made| transfer_to.get(made.to.as_str()) == Some(&payable.account.as_str()))
            .map(|made| made.amount_cents)
            .sum();
        let still_owed = entitled - transferred + reversed;
        if -payable.balance_cents != still_owed || still_owed > 0 {
            report.flag(
                CHECKS[30],
                format!(
                    "driver {driver} ({}): entitled {entitled}, transferred {transferred}, \
                     reversed {reversed}; the ledger owes them {}",
                    payable.account, -payable.balance_cents
                ),
            );
        }
    }
}
