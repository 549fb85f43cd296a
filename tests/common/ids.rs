//! A public id as tests hold it: `Copy`, like the integers they replaced,
//! shown as the API spells it, and compared with the JSON that carries it.

use ridepay::public_ids::PublicId;
use serde_json::Value;

/// The longest id: a five-character prefix and 29 characters, or a legacy
/// integer.
const MOST: usize = 40;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Id {
    text: [u8; MOST],
    len: u8,
}

impl Id {
    /// The id `text` spells.
    pub fn new(text: &str) -> Id {
        assert!(text.len() <= MOST, "not an id: {text}");
        let mut bytes = [0; MOST];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        Id {
            text: bytes,
            len: text.len() as u8,
        }
    }

    /// The id an answer carries: a string, or a legacy integer.
    pub fn of(value: &Value) -> Id {
        match value {
            Value::String(text) => Id::new(text),
            Value::Number(number) => Id::new(&number.to_string()),
            other => panic!("not an id: {other}"),
        }
    }

    /// An id of kind `T` that names no row.
    pub fn nothing<T: PublicId>() -> Id {
        Id::new(&format!("{}{}", T::PREFIX, "a".repeat(29)))
    }

    /// The id as the service's type, to find its row with.
    pub fn public<T: PublicId>(&self) -> T {
        T::parse(self.as_str()).unwrap_or_else(|| panic!("not a {} id: {self}", T::PREFIX))
    }

    /// SQL for the integer key of the row it names, for tests that look
    /// at the rows themselves.
    pub fn row_key(&self) -> String {
        let text = self.as_str();
        if text.bytes().all(|byte| byte.is_ascii_digit()) {
            return text.to_owned();
        }
        let table = match &text[..5] {
            "ride_" => "rides",
            "rfnd_" => "refunds WHERE part_of IS NULL AND",
            "whep_" => "webhook_endpoints",
            "whdl_" => "webhook_deliveries",
            other => panic!("no table has {other} ids"),
        };
        let (table, and) = table
            .split_once(" WHERE ")
            .map_or((table, ""), |(t, c)| (t, c));
        let body = match &text[..5] {
            "ride_" => hex_body::<ridepay::public_ids::RidePublicId>(text),
            "rfnd_" => hex_body::<ridepay::public_ids::RefundPublicId>(text),
            "whep_" => hex_body::<ridepay::public_ids::DestinationPublicId>(text),
            _ => hex_body::<ridepay::public_ids::DeliveryPublicId>(text),
        };
        format!("(SELECT id FROM {table} WHERE {and} public_id = '\\x{body}'::bytea)")
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.text[..usize::from(self.len)]).unwrap()
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<Id> for Value {
    fn eq(&self, id: &Id) -> bool {
        self.as_str() == Some(id.as_str())
    }
}

impl PartialEq<Id> for &Value {
    fn eq(&self, id: &Id) -> bool {
        self.as_str() == Some(id.as_str())
    }
}

fn hex_body<T: PublicId>(text: &str) -> String {
    hex::encode(T::parse(text).unwrap().body())
}

/// Whether `text` is an id of kind `prefix` as the API spells it.
pub fn is_public_id(prefix: &str, text: &str) -> bool {
    text.strip_prefix(prefix).is_some_and(|body| {
        body.len() == 29
            && body
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || (b'2'..=b'7').contains(&byte))
    })
}
