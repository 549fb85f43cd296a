//! The body of `POST /api/webhook_endpoints`.

use serde::{Deserialize, Serialize};

use crate::http_client::destination::DestinationPolicy;
use crate::user_webhooks::events::is_pattern;
use crate::validation::{parse_body, FieldError};
use crate::wire::requests::WebhookEndpointBody;

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
