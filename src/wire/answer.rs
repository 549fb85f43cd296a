//! The answers a key stores, by their status: a 200, a 201 at the resource's
//! `Location`, a 202 at where it goes on.

use crate::idempotency::{StoredHeaders, StoredResponse};

const JSON: &str = "application/json";

/// A 200 with a JSON body.
pub fn ok(body: Vec<u8>) -> StoredResponse {
    StoredResponse {
        status: 200,
        headers: StoredHeaders(vec![("Content-Type".to_owned(), JSON.to_owned())]),
        body,
    }
}

/// A 201 with a JSON body and the `Location` of what was created.
pub fn created(location: String, body: Vec<u8>) -> StoredResponse {
    located(201, location, body)
}

/// A 202: created, and still under way at `location`.
pub fn accepted(location: String, body: Vec<u8>) -> StoredResponse {
    located(202, location, body)
}

fn located(status: u16, location: String, body: Vec<u8>) -> StoredResponse {
    StoredResponse {
        status,
        headers: StoredHeaders(vec![
            ("Content-Type".to_owned(), JSON.to_owned()),
            ("Location".to_owned(), location),
        ]),
        body,
    }
}
