//! The sender of users' webhooks: each pass claims the deliveries that are
//! due (a lease on each row, no row lock held), then sends every one on a
//! thread of its own, holding no pooled connection while the receiver
//! answers, and records the attempt.
//!
//! Fair shares: an instance has `IN_FLIGHT` slots for attempts; one
//! destination holds at most `PER_DESTINATION` of them and one owner (a
//! user's destinations together, or the installation's receipts
//! destination) at most `PER_OWNER`, so a user whose destinations hang
//! holds a quarter of the slots and everyone else has the rest. A claim
//! serves owners in turn: each owner's first due delivery before anyone's
//! second. It reads at most `PER_DESTINATION` due deliveries of each
//! destination that has pending ones, never the whole backlog. Slots are
//! counted by each instance for itself: an instance that dies mid-attempt
//! holds no other's slots while its leases run out.
//!
//! At least once: a delivery is sent until a 2xx comes back within the
//! timeout, with the same `webhook-id` and body every time and a timestamp
//! and signature made for each attempt; then by the retry schedule; a 3xx
//! is a failure (never followed), a 410 disables the destination, a
//! `Retry-After` is waited at least, and a destination whose every attempt
//! has failed for `disable_after` is disabled. An attempt whose destination
//! or event was deleted meanwhile is dropped without a trace.
//!
//! Users' destinations are reached only at addresses the policy allows,
//! checked on the address connected to, never through a proxy named by the
//! environment (which would be checked instead of the destination); the
//! installation's own (receipts) is the operator's setting, checked when
//! read (`config`), and may be an internal service.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Interval, Nullable, Text};

use super::events::Staged;
use super::signing::signature;
use crate::config::UserWebhookSettings;
use crate::db::{self, DbPool};
use crate::http_client::destination::{DestinationPolicy, GuardedResolver, NotAllowed};
use crate::public_ids::DestinationPublicId;

/// Attempts to one destination in flight at once on an instance, at most.
const PER_DESTINATION: i64 = 16;
/// Attempts to one owner's destinations in flight at once on an instance,
/// at most: a quarter of `IN_FLIGHT`.
const PER_OWNER: i64 = 16;
/// Attempts in flight on one instance, at most.
const IN_FLIGHT: usize = 64;
/// The owner the installation's own destination counts as: no user's id.
const INSTALLATION: i64 = 0;
/// A destination whose attempts are refused is logged at most this often.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(60);
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
    config: Arc<UserWebhookSettings>,
    /// This instance's attempts in flight, and the signal that one ended.
    slots: Arc<(Mutex<Slots>, Condvar)>,
    /// When each destination's refused attempt was last logged.
    refusals_logged: Arc<Mutex<HashMap<i64, Instant>>>,
}

#[derive(Default)]
struct Slots {
    in_flight: usize,
    /// Attempts in flight, by destination.
    by_destination: HashMap<i64, i64>,
    /// Attempts in flight, by owner.
    by_owner: HashMap<i64, i64>,
    /// Attempts ended, ever: what a pass waiting for one watches.
    ended: u64,
}

impl Slots {
    fn take(&mut self, delivery: &Claimed) {
        self.in_flight += 1;
        *self.by_destination.entry(delivery.endpoint_id).or_default() += 1;
        *self.by_owner.entry(delivery.owner).or_default() += 1;
    }

    fn give_back(&mut self, delivery: &Claimed) {
        for (counts, id) in [
            (&mut self.by_destination, delivery.endpoint_id),
            (&mut self.by_owner, delivery.owner),
        ] {
            if let Some(count) = counts.get_mut(&id) {
                *count -= 1;
                if *count <= 0 {
                    counts.remove(&id);
                }
            }
        }
        self.in_flight -= 1;
        self.ended += 1;
    }

    /// What the claim must count as busy: ids and counts, apart.
    fn busy(counts: &HashMap<i64, i64>) -> (Vec<i64>, Vec<i64>) {
        counts.iter().map(|(id, count)| (*id, *count)).unzip()
    }
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
    /// The destination's id as its user knows it, for the log.
    #[diesel(sql_type = diesel::sql_types::Bytea)]
    endpoint_public_id: DestinationPublicId,
    /// The destination's user, or `INSTALLATION` for receipts.
    #[diesel(sql_type = BigInt)]
    owner: i64,
    #[diesel(sql_type = Text)]
    url: String,
    #[diesel(sql_type = Text)]
    secret: String,
    /// The secret before a roll, while it still signs.
    #[diesel(sql_type = Nullable<Text>)]
    previous_secret: Option<String>,
    #[diesel(embed)]
    event: Staged,
}

/// What one attempt came to.
#[derive(Debug)]
struct Attempt {
    at: DateTime<Utc>,
    duration: Duration,
    http_status: Option<u16>,
    error: Option<String>,
    retry_after: Option<Duration>,
    /// The host resolved to no address the sender may reach.
    refused: bool,
}

impl Attempt {
    /// An attempt that got no answer, for `error`.
    fn failed(at: DateTime<Utc>, duration: Duration, error: &str, refused: bool) -> Attempt {
        Attempt {
            at,
            duration,
            http_status: None,
            error: Some(error.chars().take(500).collect()),
            retry_after: None,
            refused,
        }
    }

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
    pub fn new(pool: DbPool, config: &UserWebhookSettings) -> Sender {
        let resolver = GuardedResolver {
            policy: DestinationPolicy {
                allow_loopback: config.allow_loopback,
            },
            inner: Default::default(),
        };
        let agent_config = crate::http_client::config(config.timeout, config.timeout);
        let users_config = crate::http_client::builder(config.timeout, config.timeout)
            .proxy(None)
            .build();
        Sender {
            pool,
            agent: ureq::Agent::with_parts(
                users_config,
                ureq::unversioned::transport::DefaultConnector::default(),
                resolver,
            ),
            operator_agent: agent_config.into(),
            config: Arc::new(config.clone()),
            slots: Arc::default(),
            refusals_logged: Arc::default(),
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
        let (free, busy_destinations, busy_owners) = {
            let slots = self.slots.0.lock().unwrap();
            (
                IN_FLIGHT.saturating_sub(slots.in_flight),
                Slots::busy(&slots.by_destination),
                Slots::busy(&slots.by_owner),
            )
        };
        if free == 0 {
            return Ok(0);
        }
        let claimed = claim(
            &mut *self.pool.get()?,
            free,
            self.config.timeout + LEASE_MARGIN,
            &busy_destinations,
            &busy_owners,
        )?;
        let started = claimed.len();
        for delivery in claimed {
            self.slots.0.lock().unwrap().take(&delivery);
            let sender = self.clone();
            std::thread::Builder::new()
                .name("webhook-attempt".to_owned())
                .spawn(move || {
                    let attempt = sender.attempt(&delivery);
                    if attempt.refused {
                        sender.log_refusal(&delivery);
                    }
                    match sender.record(&delivery, &attempt) {
                        Ok(()) => {}
                        // Deleted while the receiver answered: nothing is owed.
                        Err(err) if gone(&err) => log::debug!(
                            "webhook delivery {} dropped: its destination or event is gone",
                            delivery.id
                        ),
                        // The lease runs out and another pass sends it again.
                        Err(err) => {
                            log::error!("webhook delivery {} not recorded: {err:#}", delivery.id)
                        }
                    }
                    sender.done(&delivery);
                })?;
        }
        Ok(started)
    }

    /// An attempt ended: its slots free, and a pass waiting for one told.
    fn done(&self, delivery: &Claimed) {
        let (slots, attempt_ended) = &*self.slots;
        slots.lock().unwrap().give_back(delivery);
        attempt_ended.notify_all();
    }

    /// A destination whose host resolved to no address it may reach (its
    /// name now points inside), named by its id and host, never its URL
    /// (a query may carry the receiver's token), once a minute at most.
    fn log_refusal(&self, delivery: &Claimed) {
        let now = Instant::now();
        let mut logged = self.refusals_logged.lock().unwrap();
        logged.retain(|_, at| now.duration_since(*at) < REFUSAL_LOG_EVERY);
        if logged.contains_key(&delivery.endpoint_id) {
            return;
        }
        logged.insert(delivery.endpoint_id, now);
        let url = url::Url::parse(&delivery.url);
        log::warn!(
            "webhook destination {} on {} resolves to no address it may reach; its attempts \
             fail (logged once a minute)",
            delivery.endpoint_public_id,
            url.as_ref()
                .ok()
                .and_then(url::Url::host_str)
                .unwrap_or("?")
        );
    }

    /// POSTs the event, signed for this attempt. Holds no connection.
    fn attempt(&self, delivery: &Claimed) -> Attempt {
        let at = Utc::now();
        let started = Instant::now();
        let timestamp = at.timestamp();
        let body = match delivery.event.body() {
            Ok(body) => body,
            Err(err) => {
                log::error!("event {} cannot be rendered: {err:#}", delivery.event.id);
                return Attempt::failed(at, Duration::ZERO, "the event cannot be rendered", false);
            }
        };
        let agent = match delivery.owner {
            INSTALLATION => &self.operator_agent,
            _ => &self.agent,
        };
        let sent = agent
            .post(&delivery.url)
            .header("content-type", "application/json")
            .header("webhook-id", &delivery.event.id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signatures(delivery, timestamp, &body))
            .send(&body[..]);
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
                refused: false,
            },
            Err(err) => {
                let refused = NotAllowed::caused(&err);
                let error = match refused {
                    true => NotAllowed.to_string(),
                    false => err.to_string(),
                };
                Attempt::failed(at, duration, &error, refused)
            }
        }
    }

    /// The attempt recorded: the delivery succeeded, failed permanently, or
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
fn signatures(delivery: &Claimed, timestamp: i64, body: &[u8]) -> String {
    std::iter::once(&delivery.secret)
        .chain(&delivery.previous_secret)
        .map(|secret| signature(secret, &delivery.event.id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether recording an attempt failed because its delivery, destination
/// or event was deleted meanwhile (a user deleted the destination, or
/// retention the event): the attempt's row refers to a row that is gone.
fn gone(err: &anyhow::Error) -> bool {
    use diesel::result::{DatabaseErrorKind, Error};
    matches!(
        err.downcast_ref::<Error>(),
        Some(Error::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, _) | Error::NotFound)
    )
}

/// Claims up to `limit` deliveries that are due, to enabled destinations,
/// each owner's first before anyone's next, no more than `PER_DESTINATION`
/// to a destination and `PER_OWNER` to an owner counting those this
/// instance has in flight (`busy_destinations`, `busy_owners`: ids and
/// counts): a lease of `lease` on each, its attempt counted.
///
/// The destinations with pending deliveries are found by skipping through
/// the pending index one destination at a time, and each gives at most its
/// free slots' worth of due deliveries, so a claim reads a bounded number
/// of rows per destination, however long one destination's backlog is.
fn claim(
    conn: &mut PgConnection,
    limit: usize,
    lease: Duration,
    busy_destinations: &(Vec<i64>, Vec<i64>),
    busy_owners: &(Vec<i64>, Vec<i64>),
) -> QueryResult<Vec<Claimed>> {
    diesel::sql_query(
        "WITH RECURSIVE pending (endpoint_id) AS ( \
             (SELECT endpoint_id FROM webhook_deliveries WHERE status = 'pending' \
              ORDER BY endpoint_id LIMIT 1) \
             UNION ALL \
             SELECT (SELECT d.endpoint_id FROM webhook_deliveries d \
                     WHERE d.status = 'pending' AND d.endpoint_id > pending.endpoint_id \
                     ORDER BY d.endpoint_id LIMIT 1) \
             FROM pending WHERE pending.endpoint_id IS NOT NULL), \
         busy_destinations AS ( \
             SELECT * FROM unnest($4::bigint[], $5::bigint[]) AS busy (endpoint_id, count)), \
         busy_owners AS ( \
             SELECT * FROM unnest($6::bigint[], $7::bigint[]) AS busy (owner, count)), \
         candidates AS ( \
             SELECT due.id, due.next_attempt_at, coalesce(e.user_id, 0) AS owner \
             FROM pending \
             JOIN webhook_endpoints e ON e.id = pending.endpoint_id AND e.status = 'enabled' \
             CROSS JOIN LATERAL ( \
                 SELECT d.id, d.next_attempt_at FROM webhook_deliveries d \
                 WHERE d.endpoint_id = e.id AND d.status = 'pending' \
                   AND d.next_attempt_at <= now() \
                   AND (d.locked_until IS NULL OR d.locked_until <= now()) \
                 ORDER BY d.next_attempt_at, d.id \
                 LIMIT greatest(0, $1 - coalesce( \
                     (SELECT count FROM busy_destinations b WHERE b.endpoint_id = e.id), 0)) \
             ) due), \
         ranked AS ( \
             SELECT c.id, c.next_attempt_at, \
                    row_number() OVER (PARTITION BY c.owner ORDER BY c.next_attempt_at, c.id) \
                    + coalesce((SELECT count FROM busy_owners b WHERE b.owner = c.owner), 0) \
                    AS place \
             FROM candidates c), \
         due AS ( \
             SELECT d.id FROM webhook_deliveries d JOIN ranked USING (id) \
             WHERE ranked.place <= $8 \
             ORDER BY ranked.place, ranked.next_attempt_at, d.id LIMIT $2 \
             FOR UPDATE OF d SKIP LOCKED) \
         UPDATE webhook_deliveries d \
         SET locked_until = now() + $3, attempts = d.attempts + 1 \
         FROM due, webhook_endpoints e, webhook_events event \
         WHERE d.id = due.id AND e.id = d.endpoint_id AND event.id = d.event_id \
         RETURNING d.id, d.attempts, d.endpoint_id, e.public_id AS endpoint_public_id, \
             coalesce(e.user_id, 0) AS owner, \
             e.url, e.secret, \
             CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret END \
                 AS previous_secret, \
             event.id AS event_id, event.type AS event_type, event.sequence, \
             event.created_at AS staged_at, event.body, event.snapshot, \
             EXISTS (SELECT 1 FROM users u WHERE u.id = e.user_id AND u.role = 'platform') \
                 AS for_platform",
    )
    .bind::<BigInt, _>(PER_DESTINATION)
    .bind::<BigInt, _>(limit as i64)
    .bind::<Interval, _>(db::interval(lease))
    .bind::<diesel::sql_types::Array<BigInt>, _>(&busy_destinations.0)
    .bind::<diesel::sql_types::Array<BigInt>, _>(&busy_destinations.1)
    .bind::<diesel::sql_types::Array<BigInt>, _>(&busy_owners.0)
    .bind::<diesel::sql_types::Array<BigInt>, _>(&busy_owners.1)
    .bind::<BigInt, _>(PER_OWNER)
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
