//! `POST /api/webhook_endpoints` on the idempotency flow: the request
//! taken for the key, within the user's allowance of destinations
//! (Started); its host resolved and every address it names checked, holding
//! no connection (DestinationNamed); the destination written with a new
//! secret, or the refusal, stored.

use diesel::PgConnection;
use serde::{Deserialize, Serialize};

use crate::context::ServiceContext;
use crate::http_client::destination::DestinationPolicy;
use crate::idempotency::{CallOf, Called, Endpoint, Lease, Transition, TransitionOf};
use crate::service_error::{Refusal, ServiceError};
use crate::user_webhooks::events::is_pattern;
use crate::user_webhooks::model::{self, NewDestination, MAX_PER_USER};
use crate::user_webhooks::signing::new_secret;
use crate::validation::{parse_body, FieldError};
use crate::wire;
use crate::wire::destination::WebhookEndpointBody;
use crate::wire::problem::{Problem, ProblemKind};

crate::recovery_points! {
    /// How far a registration has got. A retry (or the completer) resumes
    /// here.
    pub enum RecoveryPoint for "webhook_endpoints.create" {
        /// The request is the key's; its host may or may not have been
        /// resolved and checked. Nothing is written before it is.
        DestinationNamed = "destination_named", call "check-destination";
    }
}

const MAX_URL_BYTES: usize = 2048;
const MAX_PATTERNS: usize = 32;

/// A validated registration. Its JSON form is the canonical request: the
/// patterns sorted and each once, so their order changes nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DestinationParams {
    // In sorted order, as the canonical form needs.
    pub events: Vec<String>,
    pub url: String,
}

impl DestinationParams {
    pub fn parse(
        policy: DestinationPolicy,
        body: &[u8],
    ) -> Result<DestinationParams, Vec<FieldError>> {
        let body: WebhookEndpointBody = parse_body(body, expected).map_err(|err| vec![err])?;
        let mut errors = Vec::new();
        let required = |field: &str| vec![FieldError::new(field, "is required")];
        let url = body
            .url
            .ok_or_else(|| required("url"))
            .and_then(|url| checked_url(policy, url))
            .map_err(|error| errors.extend(error))
            .ok();
        let events = body
            .events
            .ok_or_else(|| required("events"))
            .and_then(checked_events)
            .map_err(|error| errors.extend(error))
            .ok();
        match (url, events) {
            (Some(url), Some(events)) if errors.is_empty() => Ok(DestinationParams { events, url }),
            _ => Err(errors),
        }
    }
}

/// A destination's URL, as `policy` allows its form (its host is checked
/// apart: that takes the resolver).
pub fn checked_url(policy: DestinationPolicy, url: String) -> Result<String, Vec<FieldError>> {
    let checked = match url.len() {
        0..=MAX_URL_BYTES => policy.check_url(&url).map(|_| url),
        _ => Err(format!("must be at most {MAX_URL_BYTES} bytes")),
    };
    checked.map_err(|message| vec![FieldError::new("url", message)])
}

/// A destination's event patterns, sorted and each once.
pub fn checked_events(mut events: Vec<String>) -> Result<Vec<String>, Vec<FieldError>> {
    let problem = match events.iter().find(|pattern| !is_pattern(pattern)) {
        _ if events.is_empty() || events.len() > MAX_PATTERNS => {
            Some(format!("must name 1 to {MAX_PATTERNS} event types"))
        }
        Some(unknown) => Some(format!(
            "{unknown:?} is not an event type, a family such as ride.*, or *"
        )),
        None => None,
    };
    if let Some(message) = problem {
        return Err(vec![FieldError::new("events", message)]);
    }
    events.sort_unstable();
    events.dedup();
    Ok(events)
}

pub fn expected(field: &str) -> Option<&'static str> {
    match field {
        "url" => Some("must be a string"),
        "events" => Some("must be an array of strings"),
        "status" => Some("must be enabled or disabled"),
        _ => None,
    }
}

pub struct RegisterDestination;

/// What the destination's check found.
#[derive(Debug)]
pub enum Checked {
    /// Every address the host resolves to may be reached.
    Reachable,
    /// Why it may not be.
    Refused(String),
}

pub type CreateLease = Lease<RecoveryPoint>;

impl Endpoint for RegisterDestination {
    type Point = RecoveryPoint;
    type Params = DestinationParams;
    type Context = ServiceContext;
    type Known = ();
    type Answer = Checked;

    /// Started -> DestinationNamed: a user with all their destinations is
    /// refused here, nothing written, the key not consumed.
    fn start(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &CreateLease,
        _params: &DestinationParams,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        if model::lock_for_user(conn, lease.user_id())? >= MAX_PER_USER {
            return Err(limit_reached());
        }
        Ok(Transition::Advance(RecoveryPoint::DestinationNamed, ()))
    }

    /// A registration knows nothing but its request.
    fn load(
        _cx: &ServiceContext,
        _conn: &mut PgConnection,
        _lease: &CreateLease,
        _params: &DestinationParams,
        _point: RecoveryPoint,
    ) -> Result<(), ServiceError> {
        Ok(())
    }

    /// The host resolved and each address checked. Holds no connection. A
    /// check never ends in a failure saved elsewhere, so it has nothing to
    /// look up: it is made again.
    fn call(
        cx: &ServiceContext,
        _lease: &CreateLease,
        params: &DestinationParams,
        _point: RecoveryPoint,
        _known: (),
    ) -> Result<CallOf<Self>, ServiceError> {
        let policy = cx.destinations;
        let checked = policy
            .check_url(&params.url)
            .and_then(|url| policy.check_destination(&url));
        Ok(Called::Answered(
            (),
            match checked {
                Ok(()) => Checked::Reachable,
                Err(reason) => Checked::Refused(reason),
            },
        ))
    }

    /// DestinationNamed -> Finished: the destination (201, with its
    /// secret), or the refusal (422), stored.
    fn record(
        cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &CreateLease,
        params: &DestinationParams,
        _known: (),
        checked: Checked,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        let refused = |kind: ProblemKind, detail: String| {
            Ok(Transition::Finish(wire::problem::stored(&Problem::new(
                kind, detail,
            ))))
        };
        if let Checked::Refused(reason) = checked {
            return refused(
                ProblemKind::WebhookDestinationNotAllowed,
                format!("url {reason}"),
            );
        }
        // Counted again under the lock: another key may have registered
        // one meanwhile.
        if model::lock_for_user(conn, lease.user_id())? >= MAX_PER_USER {
            return refused(ProblemKind::WebhookEndpointLimit, limit_detail());
        }
        let secret = new_secret();
        let endpoint = lease.insert_under_derived_id(&cx.id_secret, |public_id| {
            model::insert(
                conn,
                &NewDestination {
                    public_id,
                    user_id: lease.user_id(),
                    idempotency_key_id: lease.key_id(),
                    url: &params.url,
                    events: &params.events,
                    secret: &secret,
                },
            )
        })?;
        Ok(Transition::Finish(wire::destination::created(
            &endpoint.json(true),
        )))
    }
}

fn limit_detail() -> String {
    format!("a user has at most {MAX_PER_USER} webhook endpoints; delete one first")
}

fn limit_reached() -> ServiceError {
    ServiceError::refused(Refusal::WebhookEndpointLimit, limit_detail())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCAL: DestinationPolicy = DestinationPolicy {
        allow_loopback: true,
    };

    #[test]
    fn the_url_and_the_events_are_required_and_checked() {
        let parse = |body: &str| DestinationParams::parse(LOCAL, body.as_bytes());
        assert_eq!(
            parse(r#"{"url": "https://hooks.example/r", "events": ["ride.*", "refund.failed", "ride.*"]}"#)
                .unwrap(),
            DestinationParams {
                events: vec!["refund.failed".to_owned(), "ride.*".to_owned()],
                url: "https://hooks.example/r".to_owned(),
            }
        );
        let fields = |body: &str| -> Vec<String> {
            parse(body)
                .unwrap_err()
                .into_iter()
                .map(|error| error.field)
                .collect()
        };
        assert_eq!(fields("{}"), ["url", "events"]);
        assert_eq!(
            fields(r#"{"url": "ftp://x", "events": ["ride.created"]}"#),
            ["url", "events"]
        );
        assert_eq!(fields(r#"{"url": "https://x", "events": []}"#), ["events"]);
        assert_eq!(fields(r#"{"url": 7, "events": ["*"]}"#), ["url"]);
    }
}
