//! The sender of users' webhooks: each pass claims the deliveries that are
//! due (a lease on each row, no row lock held), then sends every one on a
//! thread of its own, holding no pooled connection while the receiver
//! answers, and records the attempt. At most `PER_DESTINATION` attempts to
//! one destination are in flight at once on an instance, so a destination
//! that hangs holds only its own slots and never delays another's (counted
//! by each instance for itself: an instance that dies mid-attempt holds no
//! other's slots while its leases run out).
//!
//! At least once: a delivery is sent until a 2xx comes back within the
//! timeout, with the same `webhook-id` and body every time and a timestamp
//! and signature made for each attempt; then by the retry schedule; a 3xx
//! is a failure (never followed), a 410 disables the destination, a
//! `Retry-After` is waited at least, and a destination whose every attempt
//! has failed for `disable_after` is disabled.
//!
//! Users' destinations are reached only at addresses the policy allows,
//! checked on the address connected to; the installation's own (receipts)
//! is the operator's setting, checked when read (`config`), and may be an
//! internal service.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Bytea, Integer, Interval, Nullable, Text};

use super::signing::signature;
use crate::config::OutboundWebhookConfig;
use crate::db::{self, DbPool};
use crate::outbound::destination::{DestinationPolicy, GuardedResolver};

/// Attempts to one destination in flight at once on an instance, at most.
const PER_DESTINATION: i64 = 16;
/// Attempts in flight on one instance, at most.
const IN_FLIGHT: usize = 64;
/// How long past the timeout a claimed delivery stays leased: an instance
/// that died mid-attempt leaves it to another after that (and its slot of
/// the destination's `PER_DESTINATION` free again).
const LEASE_MARGIN: Duration = Duration::from_secs(2);
/// How long one pass keeps claiming while it finds work: when none is
/// due that it has room for, it waits for an attempt to end and looks again.
const PASS_BUDGET: Duration = Duration::from_secs(1);
/// At most this long a `Retry-After` is waited, whatever it asks.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);
/// Events older than the retention are deleted this many at a time.
const EXPIRED_BATCH: i64 = 1000;

/// Sends the deliveries that are due, on threads of their own.
#[derive(Clone)]
pub struct Sender {
    pool: DbPool,
    /// For users' destinations: connects only where the policy allows.
    agent: ureq::Agent,
    /// For the installation's own destination.
    operator_agent: ureq::Agent,
    config: Arc<OutboundWebhookConfig>,
    /// This instance's attempts in flight, and the signal that one ended.
    slots: Arc<(Mutex<Slots>, Condvar)>,
}

#[derive(Default)]
struct Slots {
    in_flight: usize,
    /// Attempts in flight, by destination.
    by_destination: HashMap<i64, i64>,
    /// Attempts ended, ever: what a pass waiting for one watches.
    ended: u64,
}

/// A delivery claimed for one attempt, with what the attempt sends.
#[derive(Debug, QueryableByName)]
struct Claimed {
    #[diesel(sql_type = BigInt)]
    id: i64,
    /// Attempts made, this one counted.
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = BigInt)]
    endpoint_id: i64,
    /// To the installation's own destination (receipts).
    #[diesel(sql_type = Bool)]
    installation: bool,
    #[diesel(sql_type = Text)]
    event_id: String,
    #[diesel(sql_type = Text)]
    url: String,
    #[diesel(sql_type = Text)]
    secret: String,
    /// The secret before a roll, while it still signs.
    #[diesel(sql_type = Nullable<Text>)]
    previous_secret: Option<String>,
    #[diesel(sql_type = Bytea)]
    body: Vec<u8>,
}

/// What one attempt came to.
#[derive(Debug)]
struct Attempt {
    at: DateTime<Utc>,
    duration: Duration,
    http_status: Option<u16>,
    error: Option<String>,
    retry_after: Option<Duration>,
}

impl Attempt {
    fn succeeded(&self) -> bool {
        self.http_status
            .is_some_and(|status| (200..300).contains(&status))
    }

    fn gone(&self) -> bool {
        self.http_status == Some(410)
    }

    fn outcome(&self) -> &'static str {
        match () {
            _ if self.succeeded() => "succeeded",
            _ if self.gone() => "gone",
            _ => "failed",
        }
    }
}

impl Sender {
    pub fn new(pool: DbPool, config: &OutboundWebhookConfig) -> Sender {
        let resolver = GuardedResolver {
            policy: DestinationPolicy {
                allow_loopback: config.allow_loopback,
            },
            inner: Default::default(),
        };
        let agent_config = crate::outbound::config(config.timeout, config.timeout);
        Sender {
            pool,
            agent: ureq::Agent::with_parts(
                agent_config.clone(),
                ureq::unversioned::transport::DefaultConnector::default(),
                resolver,
            ),
            operator_agent: agent_config.into(),
            config: Arc::new(config.clone()),
            slots: Arc::default(),
        }
    }

    /// One pass: the events past their retention deleted, then, for up to
    /// `PASS_BUDGET`, what is due claimed, up to the free slots, and each
    /// sent on a thread of its own; while attempts are in flight, a claim
    /// that finds nothing (every slot taken, or every due delivery's
    /// destination at its cap) waits for one to end and claims again.
    /// Returns how many attempts it started.
    pub fn run_once(&self) -> anyhow::Result<usize> {
        delete_expired(&mut *self.pool.get()?, self.config.retention)?;
        let began = Instant::now();
        let mut started = 0;
        while let Some(left) = PASS_BUDGET.checked_sub(began.elapsed()) {
            let ended = self.slots.0.lock().unwrap().ended;
            match self.claim_and_send()? {
                0 if !self.wait_for_an_attempt_after(ended, left) => break,
                claimed => started += claimed,
            }
        }
        Ok(started)
    }

    /// Waits up to `limit` for an attempt to end after `ended` had: whether
    /// one did (false at once when none is in flight).
    fn wait_for_an_attempt_after(&self, ended: u64, limit: Duration) -> bool {
        let (slots, attempt_ended) = &*self.slots;
        let slots = slots.lock().unwrap();
        if slots.in_flight == 0 && slots.ended == ended {
            return false;
        }
        let (slots, _) = attempt_ended
            .wait_timeout_while(slots, limit, |slots| slots.ended == ended)
            .unwrap();
        slots.ended != ended
    }

    /// What is due, claimed up to the free slots and sent; how many.
    fn claim_and_send(&self) -> anyhow::Result<usize> {
        let (free, (busy_ids, busy_counts)): (usize, (Vec<i64>, Vec<i64>)) = {
            let slots = self.slots.0.lock().unwrap();
            let busy = slots.by_destination.iter().map(|(id, n)| (*id, *n));
            (IN_FLIGHT.saturating_sub(slots.in_flight), busy.unzip())
        };
        if free == 0 {
            return Ok(0);
        }
        let claimed = claim(
            &mut *self.pool.get()?,
            free,
            self.config.timeout + LEASE_MARGIN,
            (&busy_ids, &busy_counts),
        )?;
        let started = claimed.len();
        for delivery in claimed {
            {
                let mut slots = self.slots.0.lock().unwrap();
                slots.in_flight += 1;
                *slots
                    .by_destination
                    .entry(delivery.endpoint_id)
                    .or_default() += 1;
            }
            let sender = self.clone();
            std::thread::Builder::new()
                .name("webhook-attempt".to_owned())
                .spawn(move || {
                    let attempt = sender.attempt(&delivery);
                    if let Err(err) = sender.record(&delivery, &attempt) {
                        // The lease runs out and another pass sends it again.
                        log::error!("webhook delivery {} not recorded: {err:#}", delivery.id);
                    }
                    sender.done(delivery.endpoint_id);
                })?;
        }
        Ok(started)
    }

    /// An attempt ended: its slots free, and a pass waiting for one told.
    fn done(&self, endpoint_id: i64) {
        let (slots, attempt_ended) = &*self.slots;
        let mut slots = slots.lock().unwrap();
        if let Some(count) = slots.by_destination.get_mut(&endpoint_id) {
            *count -= 1;
            if *count <= 0 {
                slots.by_destination.remove(&endpoint_id);
            }
        }
        slots.in_flight -= 1;
        slots.ended += 1;
        attempt_ended.notify_all();
    }

    /// POSTs the event, signed for this attempt. Holds no connection.
    fn attempt(&self, delivery: &Claimed) -> Attempt {
        let at = Utc::now();
        let started = Instant::now();
        let timestamp = at.timestamp();
        let agent = match delivery.installation {
            true => &self.operator_agent,
            false => &self.agent,
        };
        let sent = agent
            .post(&delivery.url)
            .header("content-type", "application/json")
            .header("webhook-id", &delivery.event_id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signatures(delivery, timestamp))
            .send(&delivery.body[..]);
        let duration = started.elapsed();
        match sent {
            Ok(response) => Attempt {
                at,
                duration,
                http_status: Some(response.status().as_u16()),
                error: None,
                retry_after: response
                    .headers()
                    .get("retry-after")
                    .and_then(|value| value.to_str().ok())
                    .and_then(|secs| secs.trim().parse::<u64>().ok())
                    .map(|secs| Duration::from_secs(secs).min(MAX_RETRY_AFTER)),
            },
            Err(err) => Attempt {
                at,
                duration,
                http_status: None,
                error: Some(err.to_string().chars().take(500).collect()),
                retry_after: None,
            },
        }
    }

    /// The attempt recorded: the delivery succeeded, failed for good, or
    /// due again by the schedule (and any `Retry-After`); the destination
    /// healthy again, failing since its first failure, or disabled.
    fn record(&self, delivery: &Claimed, attempt: &Attempt) -> anyhow::Result<()> {
        crate::telemetry::metrics::metrics()
            .outbound_webhooks
            .with_label_values(&[attempt.outcome()])
            .inc();
        let next = self
            .config
            .retry_schedule
            .get(delivery.attempts as usize)
            .map(|wait| (*wait).max(attempt.retry_after.unwrap_or_default()))
            .filter(|_| !attempt.gone());
        let mut conn = self.pool.get()?;
        conn.transaction(|conn| -> QueryResult<()> {
            insert_attempt(conn, delivery.id, attempt)?;
            settle_delivery(conn, delivery.id, attempt.succeeded(), next)?;
            if attempt.succeeded() {
                healthy(conn, delivery.endpoint_id)
            } else {
                let reason = match attempt.gone() {
                    true => Some("the destination answered 410 Gone".to_owned()),
                    false => None,
                };
                failing(
                    conn,
                    delivery.endpoint_id,
                    attempt.at,
                    reason,
                    self.config.disable_after,
                )
            }
        })?;
        Ok(())
    }
}

/// The `webhook-signature` of an attempt: under the secret, and under the
/// one before a roll while it still signs, space-separated.
fn signatures(delivery: &Claimed, timestamp: i64) -> String {
    std::iter::once(&delivery.secret)
        .chain(&delivery.previous_secret)
        .map(|secret| signature(secret, &delivery.event_id, timestamp, &delivery.body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Claims up to `limit` deliveries that are due, to enabled destinations,
/// no more than `PER_DESTINATION` to each with those this instance has in
/// flight (`busy`: destinations and counts): a lease of `lease` on each,
/// its attempt counted.
fn claim(
    conn: &mut PgConnection,
    limit: usize,
    lease: Duration,
    busy: (&[i64], &[i64]),
) -> QueryResult<Vec<Claimed>> {
    diesel::sql_query(
        "WITH ranked AS ( \
             SELECT d.id, d.next_attempt_at, \
                    row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.next_attempt_at, d.id) \
                    + coalesce((SELECT busy.count FROM unnest($4::bigint[], $5::bigint[]) \
                                AS busy(endpoint_id, count) \
                                WHERE busy.endpoint_id = d.endpoint_id), 0) AS place \
             FROM webhook_deliveries d \
             JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.status = 'enabled' \
             WHERE d.status = 'pending' AND d.next_attempt_at <= now() \
               AND (d.locked_until IS NULL OR d.locked_until <= now())), \
         due AS ( \
             SELECT d.id FROM webhook_deliveries d JOIN ranked USING (id) \
             WHERE ranked.place <= $1 \
             ORDER BY ranked.next_attempt_at LIMIT $2 \
             FOR UPDATE OF d SKIP LOCKED) \
         UPDATE webhook_deliveries d \
         SET locked_until = now() + $3, attempts = d.attempts + 1 \
         FROM due, webhook_endpoints e, webhook_events event \
         WHERE d.id = due.id AND e.id = d.endpoint_id AND event.id = d.event_id \
         RETURNING d.id, d.attempts, d.endpoint_id, e.user_id IS NULL AS installation, \
             d.event_id, e.url, e.secret, \
             CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret END \
                 AS previous_secret, \
             event.body",
    )
    .bind::<BigInt, _>(PER_DESTINATION)
    .bind::<BigInt, _>(limit as i64)
    .bind::<Interval, _>(db::interval(lease))
    .bind::<diesel::sql_types::Array<BigInt>, _>(busy.0)
    .bind::<diesel::sql_types::Array<BigInt>, _>(busy.1)
    .load(conn)
}

fn insert_attempt(conn: &mut PgConnection, delivery_id: i64, attempt: &Attempt) -> QueryResult<()> {
    use crate::schema::webhook_attempts;
    diesel::insert_into(webhook_attempts::table)
        .values((
            webhook_attempts::delivery_id.eq(delivery_id),
            webhook_attempts::attempted_at.eq(attempt.at),
            webhook_attempts::http_status.eq(attempt.http_status.map(|status| status as i16)),
            webhook_attempts::error.eq(attempt.error.as_deref()),
            webhook_attempts::duration_ms
                .eq(attempt.duration.as_millis().min(i32::MAX as u128) as i32),
        ))
        .execute(conn)?;
    Ok(())
}

/// Succeeded; or pending again after `next` (on the database's clock, which
/// the claims of every instance read); or, with no attempt left, failed.
fn settle_delivery(
    conn: &mut PgConnection,
    delivery_id: i64,
    succeeded: bool,
    next: Option<Duration>,
) -> QueryResult<()> {
    use crate::schema::webhook_deliveries as d;
    let status = match (succeeded, next) {
        (true, _) => "succeeded",
        (false, Some(_)) => "pending",
        (false, None) => "failed",
    };
    let due = diesel::dsl::sql::<diesel::sql_types::Timestamptz>("now() + ")
        .bind::<Interval, _>(db::interval(next.unwrap_or_default()));
    diesel::update(d::table.find(delivery_id))
        .set((
            d::status.eq(status),
            d::next_attempt_at.eq(due),
            d::locked_until.eq(None::<DateTime<Utc>>),
        ))
        .execute(conn)?;
    Ok(())
}

fn healthy(conn: &mut PgConnection, endpoint_id: i64) -> QueryResult<()> {
    use crate::schema::webhook_endpoints as e;
    diesel::update(
        e::table
            .find(endpoint_id)
            .filter(e::failing_since.is_not_null()),
    )
    .set(e::failing_since.eq(None::<DateTime<Utc>>))
    .execute(conn)?;
    Ok(())
}

/// A failed attempt: the destination failing since its first failure in a
/// row, and disabled when `reason` says so (a 410) or it has been failing
/// for `disable_after`.
fn failing(
    conn: &mut PgConnection,
    endpoint_id: i64,
    at: DateTime<Utc>,
    reason: Option<String>,
    disable_after: Duration,
) -> QueryResult<()> {
    use crate::schema::webhook_endpoints as e;
    let since = match e::table
        .find(endpoint_id)
        .select(e::failing_since)
        .first::<Option<DateTime<Utc>>>(conn)?
    {
        Some(since) => since,
        None => {
            diesel::update(e::table.find(endpoint_id))
                .set(e::failing_since.eq(at))
                .execute(conn)?;
            at
        }
    };
    let long_failing =
        at - since >= chrono::Duration::from_std(disable_after).unwrap_or(chrono::Duration::MAX);
    let reason = reason.or_else(|| {
        long_failing.then(|| format!("every attempt failed for {} s", disable_after.as_secs()))
    });
    if let Some(reason) = reason {
        log::warn!("webhook endpoint {endpoint_id} disabled: {reason}");
        diesel::update(e::table.find(endpoint_id).filter(e::status.eq("enabled")))
            .set((
                e::status.eq("disabled"),
                e::disabled_reason.eq(reason),
                e::updated_at.eq(diesel::dsl::now),
            ))
            .execute(conn)?;
    }
    Ok(())
}

/// Deletes a batch of the events older than the retention, and with them
/// their deliveries and attempts.
fn delete_expired(conn: &mut PgConnection, retention: Duration) -> QueryResult<usize> {
    diesel::sql_query(
        "DELETE FROM webhook_events WHERE id IN ( \
             SELECT id FROM webhook_events WHERE created_at < now() - $1 LIMIT $2)",
    )
    .bind::<Interval, _>(db::interval(retention))
    .bind::<BigInt, _>(EXPIRED_BATCH)
    .execute(conn)
}
