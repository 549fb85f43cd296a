//! Connected accounts, as Stripe Connect holds them: made with the
//! `transfers` capability requested and `inactive` until their owner is
//! onboarded; idempotent under the caller's key, as every POST is.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde_json::Value;

use crate::events::Double;
use crate::intents::{random_id, storage, Call, Replayable};
use crate::schema::simulated_accounts;
use ridepay_gateway::{Account, CapabilityStatus, CreateAccount, GatewayError};

/// The countries the doubles make accounts in: Stripe's Express countries
/// that ridepay's currencies are paid in.
const COUNTRIES: [&str; 4] = ["US", "GB", "IE", "FR"];

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = simulated_accounts, check_for_backend(diesel::pg::Pg))]
struct StoredAccount {
    id: String,
    gateway: Double,
    email: Option<String>,
    country: String,
    transfers: String,
    details_submitted: bool,
    metadata: Value,
    created_at: DateTime<Utc>,
}

impl StoredAccount {
    fn account(&self) -> Account {
        Account {
            id: self.id.clone(),
            created: self.created_at,
            email: self.email.clone(),
            country: self.country.clone(),
            transfers: CapabilityStatus::parse(&self.transfers),
            details_submitted: self.details_submitted,
            metadata: serde_json::from_value(self.metadata.clone()).unwrap_or_default(),
        }
    }
}

impl Replayable for Account {
    fn replayed(self) -> Self {
        self
    }
}

/// `POST /v1/accounts` (`type=express`, `capabilities[transfers][requested]`).
pub fn create(
    conn: &mut PgConnection,
    request: &CreateAccount,
    double: Double,
) -> Result<Account, GatewayError> {
    let call = Call::new("create_account", &request.idempotency_key, request);
    if let Some(kept) = call.kept(conn).map_err(storage)? {
        return call.replay(kept);
    }
    if !COUNTRIES.contains(&request.country.as_str()) {
        let refused = Err(GatewayError::Rejected {
            message: format!(
                "country_unsupported: Connected accounts cannot be created in {}",
                request.country
            ),
        });
        return call.answer_once(conn, refused, |conn, answer| call.keep(conn, answer));
    }
    let metadata = request
        .metadata
        .iter()
        .map(|(name, value)| (name.clone(), Value::String(value.clone())))
        .collect();
    let made = StoredAccount {
        id: random_id("acct_sim_"),
        gateway: double,
        email: Some(request.email.clone()),
        country: request.country.clone(),
        transfers: CapabilityStatus::Inactive.as_str().to_owned(),
        details_submitted: false,
        metadata: Value::Object(metadata),
        created_at: DateTime::from_timestamp(Utc::now().timestamp(), 0).unwrap_or_default(),
    };
    call.answer_once(conn, Ok(made.account()), |conn, answer| {
        // Under a key another call answered meanwhile, nothing is made.
        conn.transaction(|conn| {
            let kept = call.keep(conn, answer)?;
            if kept {
                diesel::insert_into(simulated_accounts::table)
                    .values(&made)
                    .execute(conn)?;
            }
            Ok(kept)
        })
    })
}

/// The account `id` of `double`, if it holds one.
pub fn retrieve(
    conn: &mut PgConnection,
    id: &str,
    double: Double,
) -> Result<Option<Account>, GatewayError> {
    simulated_accounts::table
        .filter(simulated_accounts::id.eq(id))
        .filter(simulated_accounts::gateway.eq(double))
        .select(StoredAccount::as_select())
        .first(conn)
        .optional()
        .map(|found| found.map(|account| account.account()))
        .map_err(storage)
}
