//! Users and their API keys.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use sha2::{Digest, Sha256};

use crate::ids::UserId;
use crate::schema::users;
use crate::service_error::ServiceError;

/// The recognisable prefix lets secret scanners find leaked keys.
pub const API_KEY_PREFIX: &str = "ridepay_sk_";

/// A freshly generated API key. It is shown once; only its SHA-256 is stored.
pub struct ApiKey(String);

impl ApiKey {
    /// 192 random bits from the operating system.
    pub fn generate() -> Self {
        let bytes: [u8; 24] = rand::random();
        ApiKey(format!("{API_KEY_PREFIX}{}", hex::encode(bytes)))
    }

    /// A key kept by its owner (the demo user's, in the data folder).
    pub fn from_stored(key: &str) -> Self {
        ApiKey(key.to_owned())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

pub fn hash_api_key(key: &str) -> Vec<u8> {
    Sha256::digest(key.as_bytes()).to_vec()
}

ridepay_diesel_helpers::text_enum! {
    /// Whose key it is: a rider's (their rides, their webhooks) or the
    /// platform's (every ride to read, and the platform's own routes; no
    /// ride of its own).
    pub enum Role {
        Rider = "rider",
        Platform = "platform",
    }
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = users, check_for_backend(diesel::pg::Pg))]
pub struct User {
    pub id: UserId,
    pub email: String,
    pub stripe_customer_id: Option<String>,
    pub created_at: DateTime<Utc>,
    /// The saved card a ride pays with when it names none.
    pub stripe_payment_method_id: Option<String>,
    pub role: Role,
}

impl User {
    /// What only the platform's key may do (`what`: "read the ledger"): a
    /// rider's key is refused with 403 `forbidden`.
    pub fn platform_only(&self, what: &str) -> Result<(), ServiceError> {
        match self.role {
            Role::Platform => Ok(()),
            Role::Rider => Err(ServiceError::Forbidden(format!(
                "a rider key may not {what}"
            ))),
        }
    }
}

/// A user's saved card at the gateway: the customer, and the payment method
/// (`pm_...`) saved to it.
#[derive(Debug, Clone, Copy, Default)]
pub struct SavedCard<'a> {
    pub customer: Option<&'a str>,
    pub payment_method: Option<&'a str>,
}

#[derive(Insertable)]
#[diesel(table_name = users)]
struct NewUser<'a> {
    email: &'a str,
    role: Role,
    api_key_hash: &'a [u8],
    stripe_customer_id: Option<&'a str>,
    stripe_payment_method_id: Option<&'a str>,
}

/// Creates a rider and returns it with its API key, the only time the key
/// is ever available.
pub fn create(
    conn: &mut PgConnection,
    email: &str,
    card: SavedCard<'_>,
) -> QueryResult<(User, ApiKey)> {
    insert(conn, email, Role::Rider, card)
}

/// Creates a platform user (no card) and returns it with its API key.
pub fn create_platform(conn: &mut PgConnection, email: &str) -> QueryResult<(User, ApiKey)> {
    insert(conn, email, Role::Platform, SavedCard::default())
}

fn insert(
    conn: &mut PgConnection,
    email: &str,
    role: Role,
    card: SavedCard<'_>,
) -> QueryResult<(User, ApiKey)> {
    let key = ApiKey::generate();
    let user = diesel::insert_into(users::table)
        .values(NewUser {
            email,
            role,
            api_key_hash: &hash_api_key(key.expose()),
            stripe_customer_id: card.customer,
            stripe_payment_method_id: card.payment_method,
        })
        .returning(User::as_returning())
        .get_result(conn)?;
    Ok((user, key))
}

/// The user whose API key hashes to `key_hash` (see [`hash_api_key`]).
pub fn find_by_api_key_hash(conn: &mut PgConnection, key_hash: &[u8]) -> QueryResult<Option<User>> {
    users::table
        .filter(users::api_key_hash.eq(key_hash))
        .select(User::as_select())
        .first(conn)
        .optional()
}

pub fn find(conn: &mut PgConnection, id: UserId) -> QueryResult<User> {
    users::table.find(id).select(User::as_select()).first(conn)
}

/// Replaces a user's API key; the old one stops working at once.
pub fn rotate_key(conn: &mut PgConnection, user_id: UserId) -> QueryResult<ApiKey> {
    let key = ApiKey::generate();
    diesel::update(users::table.find(user_id))
        .set((
            users::api_key_hash.eq(hash_api_key(key.expose())),
            users::updated_at.eq(diesel::dsl::now),
        ))
        .execute(conn)?;
    Ok(key)
}

pub fn find_optional(conn: &mut PgConnection, id: UserId) -> QueryResult<Option<User>> {
    users::table
        .find(id)
        .select(User::as_select())
        .first(conn)
        .optional()
}

pub fn find_by_email(conn: &mut PgConnection, email: &str) -> QueryResult<Option<User>> {
    users::table
        .filter(users::email.eq(email))
        .select(User::as_select())
        .first(conn)
        .optional()
}
