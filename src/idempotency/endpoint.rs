//! An idempotent endpoint as the machinery sees it: its recovery points
//! (which name it), its request, and its phases. Given those, [`run`] serves
//! a request and [`Keys`] lets the completer finish the endpoint's abandoned
//! keys from their stored request alone.

use diesel::PgConnection;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::canonical::CanonicalRequest;
use super::claim::{self, parse_point, IdempotentRequest};
use super::completer::{ClaimedKey, Resumable};
use super::flow::{self, Outcome, Phases, Resolution};
use super::key::IdempotencyKey;
use super::policy::KeyPolicy;
use super::record::KeyRecord;
use super::recovery_point::RecoveryPoints;
use super::stored_response::StoredResponse;
use crate::db::{DbConn, DbPool};
use crate::ids::UserId;
use crate::service_error::ServiceError;

/// What the flow needs of the context an endpoint's phases work with.
pub trait FlowContext: Send + Sync {
    fn pool(&self) -> &DbPool;
    fn key_policy(&self) -> &KeyPolicy;
    /// This database's installation id, part of every key's `RidepayKey`.
    fn installation_id(&self) -> uuid::Uuid;
}

pub trait Endpoint: 'static {
    type Point: RecoveryPoints;
    /// The validated request; its canonical form is what the key stores.
    type Params: Serialize + DeserializeOwned + Send;
    type Context: FlowContext;
    type Phases<'a>: Phases<Point = Self::Point>;

    /// The phases for one request.
    fn phases<'a>(context: &'a Self::Context, params: &'a Self::Params) -> Self::Phases<'a>;

    /// The request's canonical form under an earlier fingerprint `version`,
    /// which keys stored by an earlier release are compared with; `None`
    /// when no request of that version could have been this one. By default
    /// the form never changed.
    fn canonical_under(params: &Self::Params, _version: u32) -> Option<Vec<u8>> {
        Some(CanonicalRequest::of(params).as_bytes().to_vec())
    }

    /// What is checked before the key is even looked at (nothing, unless an
    /// endpoint says): another user's resource is a 404 whatever the key, so
    /// a key's state reveals nothing about it.
    fn admit(
        _conn: &mut PgConnection,
        _user: UserId,
        _params: &Self::Params,
    ) -> Result<(), ServiceError> {
        Ok(())
    }
}

/// Serves one request of endpoint `E` for the caller whose API key hashes
/// to `api_key_hash` (`Unauthorized` for none), on `conn`: `path` as sent,
/// `params` as validated. The caller and their key row are read in one
/// statement.
pub fn run<E: Endpoint>(
    context: &E::Context,
    mut conn: DbConn,
    api_key_hash: &[u8],
    key: &IdempotencyKey,
    path: &str,
    params: &E::Params,
) -> Result<Outcome, ServiceError> {
    let (caller, found) =
        claim::find_caller_key(&mut conn, api_key_hash, key)?.ok_or(ServiceError::Unauthorized)?;
    E::admit(&mut conn, caller.id, params)?;
    let canonical = CanonicalRequest::of(params);
    let earlier = |version| E::canonical_under(params, version);
    let installation = context.installation_id();
    let request = IdempotentRequest::post(caller, installation, key, path, &canonical, &earlier);
    let lookup = claim::lookup::<E::Point>(&request, found, context.key_policy())?;
    let phases = E::phases(context, params);
    flow::run(
        context.pool(),
        conn,
        context.key_policy(),
        &request,
        lookup,
        &phases,
    )
}

/// The keys of endpoint `E`, for the completer.
pub struct Keys<E: Endpoint> {
    context: std::sync::Arc<E::Context>,
}

impl<E: Endpoint> Keys<E> {
    pub fn new(context: std::sync::Arc<E::Context>) -> Self {
        Keys { context }
    }
}

impl<E: Endpoint> Resumable for Keys<E> {
    fn endpoint(&self) -> &'static str {
        E::Point::ENDPOINT
    }

    fn awaits_external_effect(&self, record: &KeyRecord) -> Result<bool, ServiceError> {
        Ok(parse_point::<E::Point>(record)?.awaits_external_effect())
    }

    fn resume(&self, key: ClaimedKey) -> Result<StoredResponse, ServiceError> {
        let params: E::Params = key.params()?;
        let lease = key.lease::<E::Point>()?;
        let phases = E::phases(&self.context, &params);
        flow::drive(self.context.pool(), lease, &phases)
    }

    fn reconcile(
        &self,
        key: ClaimedKey,
        past_deadline: bool,
        dry_run: bool,
    ) -> Result<Resolution, ServiceError> {
        let params: E::Params = key.params()?;
        let lease = key.lease::<E::Point>()?;
        let phases = E::phases(&self.context, &params);
        flow::resolve(self.context.pool(), lease, &phases, past_deadline, dry_run)
    }
}
