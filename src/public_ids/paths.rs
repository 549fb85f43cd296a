//! An id as a path names a row: a public id, or the integer a row made
//! before public ids was shown under.

use super::encoding::PublicId;

/// An id as a path names a row: its public id or, for a row made before
/// public ids, the integer it was shown under then (`legacy_id`), which
/// resolves only for the row's own user. In a request's canonical form it
/// stays as the client sent it: a string, or a number. A path segment that
/// is neither names nothing (404).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum PathId<T> {
    Public(T),
    Legacy(i64),
}

impl<'de, T: PublicId> serde::Deserialize<'de> for PathId<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<T>(std::marker::PhantomData<T>);
        impl<T: PublicId> serde::de::Visitor<'_> for Visitor<T> {
            type Value = PathId<T>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(
                    f,
                    "a {} id, or the integer of a row made before those",
                    T::PREFIX
                )
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<PathId<T>, E> {
                PathId::parse(text)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Str(text), &self))
            }

            fn visit_u64<E: serde::de::Error>(self, number: u64) -> Result<PathId<T>, E> {
                i64::try_from(number)
                    .map(PathId::Legacy)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(number), &self))
            }
        }
        deserializer.deserialize_any(Visitor(std::marker::PhantomData))
    }
}

impl<T: PublicId> PathId<T> {
    /// What a path segment names; None for what can name no row.
    pub fn parse(segment: &str) -> Option<PathId<T>> {
        if segment.bytes().all(|byte| byte.is_ascii_digit()) {
            return segment.parse().ok().map(PathId::Legacy);
        }
        T::parse(segment).map(PathId::Public)
    }

    /// The public id it names, if it names one.
    pub fn public(self) -> Option<T> {
        match self {
            PathId::Public(id) => Some(id),
            PathId::Legacy(_) => None,
        }
    }

    /// The legacy id it names, if it names one.
    pub fn legacy(self) -> Option<i64> {
        match self {
            PathId::Public(_) => None,
            PathId::Legacy(id) => Some(id),
        }
    }
}

/// The rows of `$table` (a table with `public_id` and `legacy_id`) that
/// the path id `$id` names, as a filter: one SQL text whichever it is.
macro_rules! named {
    ($table:ident, $id:expr) => {{
        let id = $id;
        $table::public_id
            .nullable()
            .eq(id.public())
            .or($table::legacy_id.eq(id.legacy()))
    }};
}
pub(crate) use named;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::public_ids::{PublicId, RidePublicId};

    #[test]
    fn a_path_names_a_public_id_or_a_legacy_integer() {
        let id = RidePublicId::from_body([9; 18]);
        assert_eq!(
            PathId::<RidePublicId>::parse(&id.to_string()),
            Some(PathId::Public(id))
        );
        assert_eq!(
            PathId::<RidePublicId>::parse("17"),
            Some(PathId::Legacy(17))
        );
        for nothing in ["", "-1", "99999999999999999999", "ride_", "rfnd_17"] {
            assert_eq!(PathId::<RidePublicId>::parse(nothing), None, "{nothing}");
        }
        // As a canonical request holds it: as the client sent it.
        assert_eq!(
            serde_json::to_string(&PathId::<RidePublicId>::Legacy(17)).unwrap(),
            "17"
        );
        let public = PathId::Public(id);
        let json = serde_json::to_string(&public).unwrap();
        assert_eq!(json, format!("\"{id}\""));
        assert_eq!(
            serde_json::from_str::<PathId<RidePublicId>>(&json).unwrap(),
            public
        );
        assert_eq!(
            serde_json::from_str::<PathId<RidePublicId>>("17").unwrap(),
            PathId::Legacy(17)
        );
    }
}
