//! A request's canonical form: the validated request with its defaults
//! applied, as JSON with every object's keys in sorted order. It is what the
//! fingerprint hashes, and what is stored with the key so that a worker can
//! finish the request.

use std::io::Write;

use diesel::pg::Pg;
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::Jsonb;
use diesel::AsExpression;
use serde::Serialize;

/// JSONB's binary format, as Diesel exchanges it: a version byte, then JSON
/// text.
pub(super) const JSONB_FORMAT_VERSION: u8 = 1;

#[derive(Debug, Clone, PartialEq, Eq, AsExpression)]
#[diesel(sql_type = Jsonb)]
pub struct CanonicalRequest(Vec<u8>);

impl CanonicalRequest {
    /// `params` serialised straight to bytes, which every request on a key
    /// pays, replays included. That is canonical only when `T` declares its
    /// fields in sorted order (the order a `serde_json::Value` map keeps): debug
    /// builds, and so every test, check it against the form built through a
    /// `Value`.
    pub fn of<T: Serialize>(params: &T) -> Self {
        let bytes = serde_json::to_vec(params).expect("request params always serialise");
        debug_assert_eq!(
            bytes,
            serde_json::to_vec(&serde_json::to_value(params).expect("params serialise"))
                .expect("a JSON value always serialises"),
            "{} must declare its fields in sorted order",
            std::any::type_name::<T>()
        );
        CanonicalRequest(bytes)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Stored as it is: the bytes are JSON already, so no `Value` is built.
impl ToSql<Jsonb, Pg> for CanonicalRequest {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        out.write_all(&[JSONB_FORMAT_VERSION])?;
        out.write_all(&self.0)?;
        Ok(IsNull::No)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Sorted {
        amount: i64,
        note: Option<String>,
        zone: f64,
    }

    #[cfg(debug_assertions)]
    #[derive(Serialize)]
    struct Unsorted {
        zone: f64,
        amount: i64,
    }

    #[test]
    fn is_the_json_of_the_params() {
        let canonical = CanonicalRequest::of(&Sorted {
            amount: 5,
            note: None,
            zone: -0.5,
        });
        assert_eq!(
            canonical.as_bytes(),
            br#"{"amount":5,"note":null,"zone":-0.5}"#
        );
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "must declare its fields in sorted order")]
    fn refuses_params_whose_fields_are_not_sorted() {
        CanonicalRequest::of(&Unsorted {
            zone: 1.0,
            amount: 2,
        });
    }
}
