//! `POST /api/drivers` on the idempotency flow: the request taken for the
//! key (Started); the driver's connected account made at the gateway under
//! the key's derived key, holding no connection (AccountRequested); the
//! driver written with the account and a new onboarding token, or the
//! gateway's refusal, stored.

use chrono::Utc;
use diesel::PgConnection;
use serde::{Deserialize, Serialize};

use super::model::{self, DriverStatus, NewDriver, OnboardingToken};
use super::reads;
use crate::context::ServiceContext;
use crate::idempotency::{CallOf, Called, Endpoint, FoundOf, Lease, Transition, TransitionOf};
use crate::payments::{
    call_metadata, final_answer, gateway_key, lookup, Final, ListAccounts, INSTALLATION,
    RIDEPAY_KEY,
};
use crate::public_ids::DriverPublicId;
use crate::service_error::ServiceError;
use crate::users::Role;
use crate::validation::{parse_body, FieldError};
use crate::wire;
use crate::wire::driver::DriverBody;
use crate::wire::problem::{Problem, ProblemKind};
use ridepay_gateway::{Account, CreateAccount};

crate::recovery_points! {
    /// How far a driver's registration has got. A retry (or the completer)
    /// resumes here.
    pub enum RecoveryPoint for "drivers.create" {
        /// The request is the key's; the driver's connected account may or
        /// may not have been made. Nothing is written before it is.
        AccountRequested = "account_requested", call "create-account";
    }
}

/// Names the call in its derived gateway key.
pub const ACCOUNT_KEY_PURPOSE: &str = "driver-account";
/// The metadata that names the driver on their account.
pub const DRIVER_METADATA: &str = "ridepay_driver";

const MAX_EMAIL_CHARS: usize = 254;

/// How far before the oldest resumable key an account is looked for: the
/// gateway's clock may be behind ours.
const LOOKUP_MARGIN: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

/// A validated registration. Its JSON form is the canonical request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriverParams {
    // In sorted order, as the canonical form needs.
    pub country: String,
    pub email: String,
}

impl DriverParams {
    /// `platform_country`: the only country a driver may be in.
    pub fn parse(platform_country: &str, body: &[u8]) -> Result<DriverParams, Vec<FieldError>> {
        let body: DriverBody = parse_body(body, expected).map_err(|err| vec![err])?;
        let mut errors = Vec::new();
        let email = match body.email {
            None => Err("is required".to_owned()),
            Some(email) if is_email(&email) => Ok(email),
            Some(_) => Err(format!(
                "must be an email address of at most {MAX_EMAIL_CHARS} characters"
            )),
        }
        .map_err(|message| errors.push(FieldError::new("email", message)))
        .ok();
        let country = match body.country {
            None => Err("is required".to_owned()),
            Some(country) if country == platform_country => Ok(country),
            Some(_) => Err(format!(
                "must be {platform_country}, the platform's country: a driver elsewhere \
                 needs the gateway's cross-border terms"
            )),
        }
        .map_err(|message| errors.push(FieldError::new("country", message)))
        .ok();
        match (email, country) {
            (Some(email), Some(country)) if errors.is_empty() => {
                Ok(DriverParams { country, email })
            }
            _ => Err(errors),
        }
    }
}

/// One `@` between a local part and a domain with a dot, and nothing a
/// mail header could not carry.
fn is_email(text: &str) -> bool {
    let printable = text.chars().all(|c| c.is_ascii_graphic() || !c.is_ascii());
    let parts = text.split_once('@').filter(|(local, domain)| {
        !local.is_empty() && domain.contains('.') && !domain.contains('@')
    });
    printable && parts.is_some() && text.chars().count() <= MAX_EMAIL_CHARS
}

fn expected(field: &str) -> Option<&'static str> {
    matches!(field, "email" | "country").then_some("must be a string")
}

/// The endpoint.
pub struct DriverEndpoint;

pub type DriverLease = Lease<RecoveryPoint>;

impl Endpoint for DriverEndpoint {
    type Point = RecoveryPoint;
    type Params = DriverParams;
    type Context = ServiceContext;
    type Known = ();
    type Answer = Final<Account>;

    const CALLERS: &'static [Role] = &[Role::Platform];

    /// Started -> AccountRequested: nothing to write before the account.
    fn start(
        _cx: &ServiceContext,
        _conn: &mut PgConnection,
        _lease: &DriverLease,
        _params: &DriverParams,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        Ok(Transition::Advance(RecoveryPoint::AccountRequested, ()))
    }

    /// A registration knows nothing but its request.
    fn load(
        _cx: &ServiceContext,
        _conn: &mut PgConnection,
        _lease: &DriverLease,
        _params: &DriverParams,
        _point: RecoveryPoint,
    ) -> Result<(), ServiceError> {
        Ok(())
    }

    /// The driver's Express account, with the `transfers` capability
    /// requested, named by the request in its metadata.
    fn call(
        cx: &ServiceContext,
        lease: &DriverLease,
        params: &DriverParams,
        _point: RecoveryPoint,
        _known: (),
    ) -> Result<CallOf<Self>, ServiceError> {
        let calls = lease.gateway_calls();
        let driver: DriverPublicId = cx.id_secret.derive(calls.from.as_bytes(), 0);
        let mut metadata = call_metadata(cx.installation_id, calls);
        metadata.push((DRIVER_METADATA.to_owned(), driver.to_string()));
        let answer = cx.gateway.create_account(&CreateAccount {
            idempotency_key: gateway_key(calls, ACCOUNT_KEY_PURPOSE),
            email: params.email.clone(),
            country: params.country.clone(),
            metadata,
        });
        Ok(Called::Answered((), final_answer(answer)?))
    }

    /// The account any generation of the call made, found in the gateway's
    /// list of accounts by the request's metadata: a key still resumable is
    /// younger than the effect deadline, so its account is too.
    fn look_up(
        cx: &ServiceContext,
        lease: &DriverLease,
        _params: &DriverParams,
        _point: RecoveryPoint,
        _known: (),
    ) -> Result<FoundOf<Self>, ServiceError> {
        let since = Utc::now() - cx.key_policy.effect_deadline - LOOKUP_MARGIN;
        let request = lease.gateway_calls().from.to_hex();
        let mut listing = Some(ListAccounts::since(since));
        while let Some(list) = listing {
            let page = cx
                .gateway
                .list_accounts(&list)
                .map_err(crate::payments::unavailable)?;
            let made = page.accounts.iter().find(|account| {
                account.metadata.get(RIDEPAY_KEY) == Some(&request)
                    && account.metadata.get(INSTALLATION) == Some(&cx.installation_id.to_string())
            });
            if let Some(made) = made {
                return Ok(lookup::found((), Some(Final::Made(made.clone()))));
            }
            listing = list.after(&page);
        }
        Ok(lookup::found((), None))
    }

    /// AccountRequested -> Finished: the driver (201, with the onboarding
    /// page's URL), or the gateway's refusal (502), stored.
    fn record(
        cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &DriverLease,
        params: &DriverParams,
        _known: (),
        answer: Final<Account>,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        let account = match answer {
            Final::Made(account) => account,
            Final::Refused(refusal) => {
                log::error!("the gateway refused a driver's account: {refusal}");
                return Ok(Transition::Finish(wire::problem::stored(&Problem::new(
                    ProblemKind::PaymentGatewayRejected,
                    refusal.to_string(),
                ))));
            }
        };
        let token = OnboardingToken::generate();
        let hash = token.hash();
        let driver = lease.insert_under_derived_id(&cx.id_secret, |public_id| {
            model::insert(
                conn,
                &NewDriver {
                    public_id,
                    idempotency_key_id: lease.key_id(),
                    email: &params.email,
                    country: &params.country,
                    account_id: &account.id,
                    payable_code: model::payable_code(public_id),
                    status: DriverStatus::Onboarding.learnt(account.can_be_paid()),
                    onboarding_token_hash: &hash,
                    onboarding_token_expires_at: token.expires_at,
                },
            )
        })?;
        let json = reads::json(conn, driver, Some((&token, &cx.drivers.pages)))?;
        Ok(Transition::Finish(wire::driver::created(&json)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_email_and_the_platforms_country_are_required() {
        let parse = |body: &str| DriverParams::parse("US", body.as_bytes());
        assert_eq!(
            parse(r#"{"email": "ada@example.com", "country": "US"}"#).unwrap(),
            DriverParams {
                country: "US".to_owned(),
                email: "ada@example.com".to_owned(),
            }
        );
        let fields = |body: &str| -> Vec<String> {
            parse(body)
                .unwrap_err()
                .into_iter()
                .map(|error| error.field)
                .collect()
        };
        assert_eq!(fields("{}"), ["email", "country"]);
        assert_eq!(
            fields(r#"{"email": "ada@example.com", "country": "GB"}"#),
            ["country"]
        );
        for email in [
            "ada",
            "@example.com",
            "ada@example",
            "a b@example.com",
            "a@b@c.d",
        ] {
            assert_eq!(
                fields(&format!(r#"{{"email": "{email}", "country": "US"}}"#)),
                ["email"]
            );
        }
        assert_eq!(fields(r#"{"email": 7, "country": "US"}"#), ["email"]);
    }
}
