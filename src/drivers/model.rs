//! A driver's row: the connected account that pays them, where it stands,
//! and the token of their onboarding pages.

use chrono::{DateTime, Utc};
use diesel::dsl::sql;
use diesel::expression::SqlLiteral;
use diesel::prelude::*;
use diesel::sql_types::{Bytea, Nullable};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::ids::KeyId;
use crate::public_ids::DriverPublicId;
use crate::schema::drivers;

ridepay_diesel_helpers::text_enum! {
    /// Whether transfers can reach the driver: `onboarding` until the
    /// account's `transfers` capability is active, then `active`;
    /// `restricted` when the gateway stops it, `active` again when it
    /// allows it again.
    pub enum DriverStatus {
        Onboarding = "onboarding",
        Active = "active",
        Restricted = "restricted",
    }
}

impl DriverStatus {
    /// The status after the gateway said whether the account can be paid.
    pub fn learnt(self, can_be_paid: bool) -> DriverStatus {
        match (self, can_be_paid) {
            (_, true) => DriverStatus::Active,
            (DriverStatus::Onboarding, false) => DriverStatus::Onboarding,
            (_, false) => DriverStatus::Restricted,
        }
    }
}

/// A driver's row: read, or as the event of a change to it staged it
/// (`to_jsonb`), whose columns are its fields.
#[derive(Debug, Clone, Queryable, Selectable, Deserialize)]
#[diesel(table_name = drivers, check_for_backend(diesel::pg::Pg))]
pub struct Driver {
    pub id: i64,
    pub public_id: DriverPublicId,
    pub email: String,
    pub country: String,
    pub account_id: String,
    pub status: DriverStatus,
    pub status_checked_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

#[derive(Insertable)]
#[diesel(table_name = drivers)]
pub struct NewDriver<'a> {
    pub public_id: DriverPublicId,
    pub idempotency_key_id: KeyId,
    pub email: &'a str,
    pub country: &'a str,
    pub account_id: &'a str,
    pub payable_code: String,
    pub status: DriverStatus,
    pub onboarding_token_hash: &'a [u8],
    pub onboarding_token_expires_at: DateTime<Utc>,
}

/// The public id of a ride's driver (`ride_drivers`), as a column of the
/// statement that reads the ride (`rides::model::Ride`, whose table every
/// such statement names `rides`): no round trip of its own, and NULL for a
/// ride without one.
pub type RideDriver = SqlLiteral<Nullable<Bytea>>;

pub fn ride_driver() -> RideDriver {
    sql(
        "(SELECT d.public_id FROM ride_drivers AS rd JOIN drivers AS d ON d.id = rd.driver_id \
         WHERE rd.ride_id = rides.id)",
    )
}

/// The code of the ledger accounts (one per currency,
/// `<code>:<currency>`) of what ridepay owes the driver.
pub fn payable_code(id: DriverPublicId) -> String {
    format!("driver:{id}:payable")
}

/// Inserts the driver; `None` if its id is taken.
pub fn insert(conn: &mut PgConnection, driver: &NewDriver<'_>) -> QueryResult<Option<Driver>> {
    diesel::insert_into(drivers::table)
        .values(driver)
        .on_conflict(drivers::public_id)
        .do_nothing()
        .returning(Driver::as_returning())
        .get_result(conn)
        .optional()
}

pub fn find(conn: &mut PgConnection, id: DriverPublicId) -> QueryResult<Option<Driver>> {
    drivers::table
        .filter(drivers::public_id.eq(id))
        .select(Driver::as_select())
        .first(conn)
        .optional()
}

/// As `find`, the driver's row locked `FOR UPDATE` until the transaction
/// ends.
pub fn find_locked(conn: &mut PgConnection, id: DriverPublicId) -> QueryResult<Option<Driver>> {
    drivers::table
        .filter(drivers::public_id.eq(id))
        .select(Driver::as_select())
        .for_update()
        .first(conn)
        .optional()
}

/// How long an onboarding token opens the driver's pages.
pub const TOKEN_LIFETIME: chrono::TimeDelta = chrono::TimeDelta::days(7);

/// The token of a driver's onboarding pages: 128 random bits, shown once
/// (in the answer that made it), stored only as its SHA-256.
pub struct OnboardingToken {
    pub text: String,
    pub expires_at: DateTime<Utc>,
}

impl OnboardingToken {
    pub fn generate() -> OnboardingToken {
        let bytes: [u8; 16] = rand::random();
        OnboardingToken {
            text: hex::encode(bytes),
            expires_at: Utc::now() + TOKEN_LIFETIME,
        }
    }

    pub fn hash(&self) -> Vec<u8> {
        token_hash(&self.text)
    }
}

pub fn token_hash(text: &str) -> Vec<u8> {
    Sha256::digest(text.as_bytes()).to_vec()
}

/// Gives the driver a new token, which ends the one before.
pub fn renew_token(
    conn: &mut PgConnection,
    id: DriverPublicId,
    token: &OnboardingToken,
) -> QueryResult<Option<Driver>> {
    diesel::update(drivers::table.filter(drivers::public_id.eq(id)))
        .set((
            drivers::onboarding_token_hash.eq(token.hash()),
            drivers::onboarding_token_expires_at.eq(token.expires_at),
            drivers::onboarding_link_made_at.eq(None::<DateTime<Utc>>),
            drivers::updated_at.eq(diesel::dsl::now),
        ))
        .returning(Driver::as_returning())
        .get_result(conn)
        .optional()
}

/// Records what the gateway says of the driver's account now: the driver
/// after (`None`: no driver has it).
pub fn learn_status(
    conn: &mut PgConnection,
    account_id: &str,
    can_be_paid: bool,
) -> QueryResult<Option<Driver>> {
    conn.transaction(|conn| {
        let Some(before) = drivers::table
            .filter(drivers::account_id.eq(account_id))
            .select(Driver::as_select())
            .for_update()
            .first(conn)
            .optional()?
        else {
            return Ok(None);
        };
        diesel::update(drivers::table.find(before.id))
            .set((
                drivers::status.eq(before.status.learnt(can_be_paid)),
                drivers::status_checked_at.eq(diesel::dsl::now),
                drivers::updated_at.eq(diesel::dsl::now),
            ))
            .returning(Driver::as_returning())
            .get_result(conn)
            .map(Some)
    })
}

#[cfg(test)]
mod tests {
    use super::DriverStatus::{self, *};

    #[test]
    fn a_driver_is_restricted_only_after_onboarding() {
        let learnt = |status: DriverStatus, paid| status.learnt(paid);
        assert_eq!(learnt(Onboarding, false), Onboarding);
        assert_eq!(learnt(Onboarding, true), Active);
        assert_eq!(learnt(Active, false), Restricted);
        assert_eq!(learnt(Restricted, false), Restricted);
        assert_eq!(learnt(Restricted, true), Active);
    }
}
