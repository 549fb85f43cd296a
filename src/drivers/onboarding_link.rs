//! `POST /api/drivers/{id}/onboarding_link`: a new token for the driver's
//! onboarding pages, which ends the one before, written and answered in
//! the claim's transaction (the token is shown only in that answer).

use diesel::PgConnection;
use serde::{Deserialize, Serialize};

use super::model::{self, OnboardingToken};
use super::reads;
use crate::context::ServiceContext;
use crate::idempotency::{Endpoint, Lease, Transition, TransitionOf};
use crate::ids::UserId;
use crate::public_ids::DriverPublicId;
use crate::service_error::ServiceError;
use crate::users::Role;
use crate::validation::{parse_body, FieldError};
use crate::wire;
use crate::wire::destination::EmptyBody;

crate::recovery_points! {
    /// A new link is written and answered at once.
    pub enum RecoveryPoint for "drivers.onboarding_link" {}
}

/// Whose link it is. Its JSON form is the canonical request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkParams {
    pub driver_id: DriverPublicId,
}

impl LinkParams {
    /// The path names the driver; the body, if any, is `{}`.
    pub fn parse(driver_id: DriverPublicId, body: &[u8]) -> Result<LinkParams, Vec<FieldError>> {
        if !body.iter().all(u8::is_ascii_whitespace) {
            parse_body::<EmptyBody>(body, |_| None).map_err(|err| vec![err])?;
        }
        Ok(LinkParams { driver_id })
    }
}

pub struct OnboardingLinkEndpoint;

impl Endpoint for OnboardingLinkEndpoint {
    type Point = RecoveryPoint;
    type Params = LinkParams;
    type Context = ServiceContext;
    type Known = ();
    type Answer = ();

    const CALLERS: &'static [Role] = &[Role::Platform];

    /// Started -> Finished: the new token written, the driver with its
    /// page's URL answered.
    fn start(
        cx: &ServiceContext,
        conn: &mut PgConnection,
        _lease: &Lease<RecoveryPoint>,
        params: &LinkParams,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        let token = OnboardingToken::generate();
        let driver =
            model::renew_token(conn, params.driver_id, &token)?.ok_or(ServiceError::NotFound)?;
        let json = reads::json(conn, driver, Some((&token, &cx.drivers.pages)))?;
        Ok(Transition::Finish(wire::answer::ok(json.body())))
    }

    /// Nothing is left to resume: the key finishes where it starts.
    fn load(
        _cx: &ServiceContext,
        _conn: &mut PgConnection,
        _lease: &Lease<RecoveryPoint>,
        _params: &LinkParams,
        _point: RecoveryPoint,
    ) -> Result<(), ServiceError> {
        Ok(())
    }

    /// An unknown driver is a 404 before the key is looked at.
    fn admit(
        conn: &mut PgConnection,
        _user: UserId,
        params: &LinkParams,
    ) -> Result<(), ServiceError> {
        model::find(conn, params.driver_id)?
            .map(drop)
            .ok_or(ServiceError::NotFound)
    }
}
