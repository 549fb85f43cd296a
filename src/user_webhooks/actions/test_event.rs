//! `POST /api/webhook_endpoints/{id}/test`: an event of type
//! `webhook_endpoint.test`, about no ride, delivered to this destination
//! alone, whatever it subscribed to, so that its receiver can be tried.

use std::time::Duration;

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Text};
use serde_json::json;

use super::{delivery_answer, destination, ActionParams, DestinationAction};
use crate::idempotency::StoredResponse;
use crate::ids::UserId;
use crate::public_ids::{DeliveryPublicId, PathId};
use crate::schema::{webhook_deliveries, webhook_events};
use crate::service_error::ServiceError;
use crate::user_webhooks::model;
use crate::wire::event::EventJson;

pub const TEST_EVENT: &str = "webhook_endpoint.test";

/// Test events a user may send in an hour, across their destinations: each
/// is a delivery the sender owes, and one user's must not crowd out
/// everyone's.
pub const TESTS_PER_HOUR: i64 = 20;

crate::recovery_points! {
    /// How far a test has got: it is written in the claim's transaction.
    pub enum RecoveryPoint for "webhook_endpoints.test" {
        /// The event and its delivery are staged; the answer is not stored yet.
        Staged = "staged", atomic;
    }
}

pub struct TestEvent;

/// The endpoint this action is.
pub type TestEventEndpoint = super::Action<TestEvent>;

impl DestinationAction for TestEvent {
    type Point = RecoveryPoint;
    const WRITTEN: RecoveryPoint = RecoveryPoint::Staged;

    fn write(
        conn: &mut PgConnection,
        user: UserId,
        params: &ActionParams,
    ) -> Result<bool, ServiceError> {
        let Some(endpoint) = model::find_for_user(conn, user, params.endpoint_id)? else {
            return Ok(false);
        };
        model::lock_user(conn, user)?;
        let (sent, wait) = sent_this_hour(conn, user)?;
        if sent >= TESTS_PER_HOUR {
            return Err(ServiceError::QuotaSpent {
                detail: format!(
                    "at most {TESTS_PER_HOUR} test events an hour; the next may be sent in {} s",
                    wait.as_secs()
                ),
                retry_after: wait,
            });
        }
        let id = format!("msg_{}", uuid::Uuid::new_v4().simple());
        let staged_at = chrono::Utc::now();
        let data = json!({ "webhook_endpoint": { "id": endpoint.public_id, "url": endpoint.url } });
        let body = EventJson::new(&id, TEST_EVENT, staged_at, None, data).body();
        diesel::insert_into(webhook_events::table)
            .values((
                webhook_events::id.eq(&id),
                webhook_events::user_id.eq(user),
                webhook_events::type_.eq(TEST_EVENT),
                webhook_events::body.eq(body),
                webhook_events::created_at.eq(staged_at),
            ))
            .execute(conn)?;
        diesel::insert_into(webhook_deliveries::table)
            .values((
                webhook_deliveries::endpoint_id.eq(endpoint.id),
                webhook_deliveries::event_id.eq(&id),
            ))
            .execute(conn)?;
        Ok(true)
    }

    /// The test's delivery: the destination's newest.
    fn answer(
        conn: &mut PgConnection,
        user: UserId,
        params: &ActionParams,
    ) -> Result<StoredResponse, ServiceError> {
        let destination = destination(conn, user, params)?;
        let delivery: DeliveryPublicId = webhook_deliveries::table
            .filter(webhook_deliveries::endpoint_id.eq(destination.id))
            .order(webhook_deliveries::id.desc())
            .select(webhook_deliveries::public_id)
            .first(conn)?;
        delivery_answer(conn, &destination, PathId::Public(delivery))
    }
}

/// The user's test events of the last hour, and how long until the oldest
/// of them is out of it.
fn sent_this_hour(conn: &mut PgConnection, user: UserId) -> QueryResult<(i64, Duration)> {
    #[derive(QueryableByName)]
    struct Sent {
        #[diesel(sql_type = BigInt)]
        count: i64,
        #[diesel(sql_type = Double)]
        wait_secs: f64,
    }
    let sent: Sent = diesel::sql_query(
        "SELECT count(*) AS count, \
             coalesce(extract(epoch FROM min(created_at) + interval '1 hour' - now()), 0) \
                 ::float8 AS wait_secs \
         FROM webhook_events \
         WHERE user_id = $1 AND type = $2 AND created_at > now() - interval '1 hour'",
    )
    .bind::<BigInt, _>(user.0)
    .bind::<Text, _>(TEST_EVENT)
    .get_result(conn)?;
    Ok((
        sent.count,
        Duration::from_secs_f64(sent.wait_secs.clamp(1.0, 3600.0).ceil()),
    ))
}
