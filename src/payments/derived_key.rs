//! The idempotency keys ridepay sends to the gateway, and the metadata that
//! names what its calls make.

use diesel::prelude::*;
use uuid::Uuid;

use crate::idempotency::{DerivedFrom, GatewayCalls};
use crate::schema::installation;

/// This database's installation id, generated once by the migrations.
pub fn installation_id(conn: &mut PgConnection) -> QueryResult<Uuid> {
    installation::table
        .select(installation::installation_id)
        .first(conn)
}

/// The gateway idempotency key of the call named `step` (`ride-capture`) of
/// a key whose calls are made as `calls` says: stable across retries, from
/// any instance; unique across deployments sharing a gateway account (the
/// installation id is in both versions). Well under Stripe's 255-character
/// limit.
///
/// Version 2's depends on nothing the database assigns: a retry that makes
/// the key row again after a failover lost it derives the same key, and the
/// gateway answers with what it already made. `g0` is the call's
/// generation, the first; reconciliation moves a call whose answer the
/// gateway lost for good on to `g1`, and so on. Version 3's keys start
/// `ridepay3-`: their holds ask for more, so their calls are other calls. A
/// version 1 key's first generation is its key as it always was; later ones
/// end in `-g<n>`.
pub fn derived_key(installation_id: Uuid, calls: GatewayCalls, step: &str) -> String {
    let generation = calls.generation;
    match calls.from {
        DerivedFrom::RowId(key_row_id) => {
            let first = format!("ridepay-{}-{step}-{key_row_id}", installation_id.simple());
            match generation {
                0 => first,
                later => format!("{first}-g{later}"),
            }
        }
        DerivedFrom::Request(ridepay_key) => format!(
            "ridepay{}-{step}-{}-g{generation}",
            calls.version,
            ridepay_key.to_hex()
        ),
    }
}

/// The metadata of a call that makes something at the gateway (a
/// PaymentIntent, a refund). Version 2's names the installation and the
/// request (`ridepay_key`), never a row; version 1's is `rows`, the row ids
/// it always sent.
pub fn call_metadata(
    installation_id: Uuid,
    calls: GatewayCalls,
    rows: impl FnOnce() -> Vec<(&'static str, String)>,
) -> Vec<(String, String)> {
    let named = match calls.from {
        DerivedFrom::RowId(_) => rows(),
        DerivedFrom::Request(ridepay_key) => vec![
            (INSTALLATION, installation_id.to_string()),
            (RIDEPAY_KEY, ridepay_key.to_hex()),
            (GENERATION, calls.generation.to_string()),
        ],
    };
    named
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

/// The metadata that names the installation and the request.
pub const INSTALLATION: &str = "ridepay_installation";
pub const RIDEPAY_KEY: &str = "ridepay_key";
pub const GENERATION: &str = "ridepay_generation";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idempotency::RidepayKey;
    use crate::ids::KeyId;

    #[test]
    fn is_stable_and_distinct_in_both_versions() {
        let installation = Uuid::from_u128(7);
        let by_row = GatewayCalls::first(DerivedFrom::RowId(KeyId(42)));
        let key = derived_key(installation, by_row, "ride-charge");
        assert_eq!(
            key,
            "ridepay-00000000000000000000000000000007-ride-charge-42"
        );
        assert_ne!(
            key,
            derived_key(
                installation,
                GatewayCalls::first(DerivedFrom::RowId(KeyId(43))),
                "ride-charge"
            )
        );
        assert_ne!(key, derived_key(installation, by_row, "refund"));
        assert_ne!(key, derived_key(Uuid::from_u128(8), by_row, "ride-charge"));
        let request = RidepayKey::parse(&"ab".repeat(32)).unwrap();
        let version_2 = GatewayCalls {
            version: 2,
            ..GatewayCalls::first(DerivedFrom::Request(request))
        };
        let by_request = derived_key(installation, version_2, "ride-charge");
        assert_eq!(
            by_request,
            format!("ridepay2-ride-charge-{}-g0", "ab".repeat(32))
        );
        assert_eq!(
            derived_key(
                installation,
                GatewayCalls::first(DerivedFrom::Request(request)),
                "ride-charge"
            ),
            format!("ridepay3-ride-charge-{}-g0", "ab".repeat(32))
        );
        assert!(by_request.len() <= 255);
        let request_calls = GatewayCalls::first(DerivedFrom::Request(request));
        assert_eq!(
            derived_key(installation, request_calls.next_generation(), "ride-charge"),
            format!("ridepay3-ride-charge-{}-g1", "ab".repeat(32))
        );
        assert_eq!(
            derived_key(installation, by_row.next_generation(), "ride-charge"),
            format!("{key}-g1")
        );
        assert!(
            derived_key(
                Uuid::max(),
                GatewayCalls {
                    from: DerivedFrom::RowId(KeyId(i64::MAX)),
                    version: 1,
                    generation: 99
                },
                "ride-charge"
            )
            .len()
                <= 255
        );
    }

    #[test]
    fn version_2_metadata_names_no_row() {
        let request = RidepayKey::parse(&"cd".repeat(32)).unwrap();
        let calls = GatewayCalls::first(DerivedFrom::Request(request));
        let metadata = call_metadata(Uuid::from_u128(7), calls.next_generation(), || {
            vec![("ride_id", "7".to_owned())]
        });
        let names: Vec<&str> = metadata.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            ["ridepay_installation", "ridepay_key", "ridepay_generation"]
        );
        assert_eq!(metadata[2].1, "1");
        let by_row = GatewayCalls::first(DerivedFrom::RowId(KeyId(9)));
        let by_row = call_metadata(Uuid::from_u128(7), by_row, || {
            vec![("ride_id", "7".to_owned())]
        });
        assert_eq!(by_row, [("ride_id".to_owned(), "7".to_owned())]);
    }
}
