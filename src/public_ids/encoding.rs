//! How an id is written and read: the kinds, each a prefix and 18 bytes;
//! the bytes in lowercase base32 on the wire, as `BYTEA` in a row, and as
//! PostgreSQL's `to_jsonb` spells them in an event's snapshot.

use diesel::pg::{Pg, PgValue};
use diesel::serialize::{Output, ToSql};
use diesel::sql_types::Bytea;

pub(super) const BODY_BYTES: usize = 18;
/// 144 bits, five to a character.
const BODY_CHARS: usize = 29;
/// RFC 4648's base32 alphabet, lowercased.
const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A kind of public id.
pub trait PublicId: Sized + Copy {
    /// `ride_`: never one of Stripe's prefixes, whose ids stand beside ours.
    const PREFIX: &'static str;
    fn from_body(body: [u8; BODY_BYTES]) -> Self;
    fn body(&self) -> &[u8; BODY_BYTES];

    /// A random id, for a row no request makes.
    fn random() -> Self {
        Self::from_body(rand::random())
    }

    /// The id `text` spells, if it is one of this kind.
    fn parse(text: &str) -> Option<Self> {
        decode(text.strip_prefix(Self::PREFIX)?).map(Self::from_body)
    }
}

fn encode(body: &[u8; BODY_BYTES]) -> String {
    let mut text = String::with_capacity(BODY_CHARS);
    let (mut bits, mut held) = (0u16, 0u32);
    for &byte in body {
        bits = (bits << 8) | u16::from(byte);
        held += 8;
        while held >= 5 {
            held -= 5;
            text.push(ALPHABET[usize::from((bits >> held) & 31)] as char);
        }
    }
    // The last four bits, and one of padding.
    text.push(ALPHABET[usize::from((bits << (5 - held)) & 31)] as char);
    text
}

/// The body `text` spells; None unless it is exactly what `encode` makes.
fn decode(text: &str) -> Option<[u8; BODY_BYTES]> {
    if text.len() != BODY_CHARS {
        return None;
    }
    let mut body = [0u8; BODY_BYTES];
    let (mut bits, mut held, mut filled) = (0u16, 0u32, 0);
    for char in text.bytes() {
        let value = ALPHABET.iter().position(|&letter| letter == char)?;
        bits = (bits << 5) | value as u16;
        held += 5;
        if held >= 8 {
            held -= 8;
            body[filled] = (bits >> held) as u8;
            filled += 1;
        }
    }
    // The padding bit must be zero, so each id has one spelling.
    (bits & ((1 << held) - 1) == 0).then_some(body)
}

/// Reads the 18 bytes of a public id as a row stores them.
fn body_from_sql(value: PgValue<'_>) -> diesel::deserialize::Result<[u8; BODY_BYTES]> {
    let bytes = <Vec<u8> as diesel::deserialize::FromSql<Bytea, Pg>>::from_sql(value)?;
    Ok(bytes.try_into().map_err(|_| "a public id is 18 bytes")?)
}

/// Reads a public id from JSON: as the API spells it, or as PostgreSQL's
/// `to_jsonb` spells a `BYTEA` (`\x` and hex) in an event's snapshot of
/// its rows.
fn body_from_json<T: PublicId>(text: &str) -> Option<T> {
    if let Some(hex_text) = text.strip_prefix("\\x") {
        let mut body = [0; BODY_BYTES];
        hex::decode_to_slice(hex_text, &mut body).ok()?;
        return Some(T::from_body(body));
    }
    T::parse(text)
}

macro_rules! public_id_type {
    ($($(#[$meta:meta])* $name:ident = $prefix:literal;)+) => {$(
        $(#[$meta])*
        #[derive(
            Clone, Copy, PartialEq, Eq, Hash, diesel::AsExpression, diesel::FromSqlRow,
        )]
        #[diesel(sql_type = Bytea)]
        pub struct $name([u8; BODY_BYTES]);

        impl PublicId for $name {
            const PREFIX: &'static str = $prefix;

            fn from_body(body: [u8; BODY_BYTES]) -> Self {
                $name(body)
            }

            fn body(&self) -> &[u8; BODY_BYTES] {
                &self.0
            }
        }

        impl ToSql<Bytea, Pg> for $name {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> diesel::serialize::Result {
                <[u8] as ToSql<Bytea, Pg>>::to_sql(&self.0, out)
            }
        }

        impl diesel::deserialize::FromSql<Bytea, Pg> for $name {
            fn from_sql(value: PgValue<'_>) -> diesel::deserialize::Result<Self> {
                body_from_sql(value).map($name)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}{}", $prefix, encode(&self.0))
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(self, f)
            }
        }

        impl From<$name> for serde_json::Value {
            fn from(id: $name) -> serde_json::Value {
                id.to_string().into()
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                body_from_json(&text).ok_or_else(|| {
                    serde::de::Error::custom(format!("not a {} id: {text:?}", $prefix))
                })
            }
        }
    )+};
}

public_id_type! {
    /// A ride's id: `ride_` and 29 characters.
    RidePublicId = "ride_";
    /// A refund's id: `rfnd_` and 29 characters.
    RefundPublicId = "rfnd_";
    /// A webhook destination's id: `whep_` and 29 characters.
    DestinationPublicId = "whep_";
    /// A delivery's id: `whdl_` and 29 characters.
    DeliveryPublicId = "whdl_";
    /// A ledger transaction's id: `ltx_` and 29 characters.
    LedgerTransactionPublicId = "ltx_";
    /// A driver's id: `drv_` and 29 characters.
    DriverPublicId = "drv_";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_its_prefix_and_29_base32_characters_and_reads_back() {
        let id = RidePublicId([0xff; BODY_BYTES]);
        let text = id.to_string();
        assert_eq!(text, format!("ride_{}6", "7".repeat(28)));
        assert_eq!(RidePublicId::parse(&text), Some(id));
        let zero = RidePublicId([0; BODY_BYTES]).to_string();
        assert_eq!(zero, format!("ride_{}", "a".repeat(29)));
        let mixed: [u8; BODY_BYTES] = std::array::from_fn(|i| (i * 37 + 11) as u8);
        let id = RefundPublicId(mixed);
        assert_eq!(RefundPublicId::parse(&id.to_string()), Some(id));
    }

    #[test]
    fn only_the_one_spelling_of_an_id_of_the_kind_parses() {
        let text = RidePublicId([7; BODY_BYTES]).to_string();
        let body = &text["ride_".len()..];
        assert_eq!(
            RefundPublicId::parse(&format!("rfnd_{body}")).map(|_| ()),
            Some(())
        );
        for other in [
            format!("rfnd_{body}"),
            text.to_uppercase(),
            format!("ride_{}", &body[1..]),
            format!("{text}a"),
            // The padding bit set.
            format!("ride_{}b", &body[..28]),
            format!("ride_{}1", &body[..28]),
        ] {
            assert_eq!(RidePublicId::parse(&other), None, "{other}");
        }
    }

    #[test]
    fn a_snapshots_bytea_reads_as_the_id() {
        let id = RidePublicId([0xab; BODY_BYTES]);
        let snapshot = format!("\"\\\\x{}\"", "ab".repeat(BODY_BYTES));
        assert_eq!(serde_json::from_str::<RidePublicId>(&snapshot).unwrap(), id);
    }
}
