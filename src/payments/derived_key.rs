//! The idempotency keys ridepay sends to the gateway.

use diesel::prelude::*;
use uuid::Uuid;

use crate::ids::KeyId;

use crate::schema::installation;

/// This database's installation id, generated once by the migrations.
pub fn installation_id(conn: &mut PgConnection) -> QueryResult<Uuid> {
    installation::table
        .select(installation::installation_id)
        .first(conn)
}

/// The gateway idempotency key for one external effect of one key row: stable
/// across retries (the row id never changes), unique forever (row ids are never
/// reused) and across deployments sharing a gateway account (the installation
/// id). Well under Stripe's 255-character limit.
pub fn derived_key(installation_id: Uuid, purpose: &str, key_row_id: KeyId) -> String {
    format!(
        "ridepay-{}-{purpose}-{key_row_id}",
        installation_id.simple()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_stable_and_distinct() {
        let installation = Uuid::from_u128(7);
        let key = derived_key(installation, "ride-charge", KeyId(42));
        assert_eq!(key, derived_key(installation, "ride-charge", KeyId(42)));
        assert_ne!(key, derived_key(installation, "ride-charge", KeyId(43)));
        assert_ne!(key, derived_key(installation, "refund", KeyId(42)));
        assert_ne!(
            key,
            derived_key(Uuid::from_u128(8), "ride-charge", KeyId(42))
        );
        assert!(derived_key(Uuid::max(), "ride-charge", KeyId(i64::MAX)).len() <= 255);
    }
}
