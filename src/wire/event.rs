//! An event on the wire, as every destination receives it: its id (the
//! `webhook-id` of each attempt), its type, when it was staged, its place
//! in its ride's sequence, and what it is about.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

#[derive(Serialize)]
pub struct EventJson<'a, D: Serialize> {
    pub id: &'a str,
    #[serde(rename = "type")]
    pub event_type: &'a str,
    /// When it was staged: RFC 3339, UTC, microseconds.
    pub timestamp: String,
    /// Its place among its ride's events (none for an event about no ride).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence: Option<i64>,
    pub data: D,
}

impl<'a, D: Serialize> EventJson<'a, D> {
    pub fn new(
        id: &'a str,
        event_type: &'a str,
        staged_at: DateTime<Utc>,
        sequence: Option<i64>,
        data: D,
    ) -> Self {
        EventJson {
            id,
            event_type,
            timestamp: staged_at.to_rfc3339_opts(SecondsFormat::Micros, true),
            sequence,
            data,
        }
    }

    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an event always serialises")
    }
}
