//! Typed row keys: a ride's cannot be passed where a user's is wanted. Each
//! is a `BIGINT` in the database, for joins; the API shows public ids
//! (`public_ids`) instead.

macro_rules! id_type {
    ($($(#[$meta:meta])* $name:ident;)+) => {$(
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash,
            serde::Serialize, serde::Deserialize,
            diesel::AsExpression, diesel::FromSqlRow,
        )]
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl diesel::serialize::ToSql<diesel::sql_types::BigInt, diesel::pg::Pg> for $name {
            fn to_sql<'b>(
                &'b self,
                out: &mut diesel::serialize::Output<'b, '_, diesel::pg::Pg>,
            ) -> diesel::serialize::Result {
                diesel::serialize::ToSql::<diesel::sql_types::BigInt, diesel::pg::Pg>::to_sql(
                    &self.0, out,
                )
            }
        }

        impl diesel::deserialize::FromSql<diesel::sql_types::BigInt, diesel::pg::Pg> for $name {
            fn from_sql(value: diesel::pg::PgValue<'_>) -> diesel::deserialize::Result<Self> {
                <i64 as diesel::deserialize::FromSql<diesel::sql_types::BigInt, diesel::pg::Pg>>::from_sql(value)
                    .map($name)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    )+};
}

id_type! {
    /// A user's id (`users.id`).
    UserId;
    /// A ride's id (`rides.id`).
    RideId;
    /// A refund's id (`refunds.id`).
    RefundId;
    /// An idempotency key row's id (`idempotency_keys.id`), not the key the
    /// client sent.
    KeyId;
}
