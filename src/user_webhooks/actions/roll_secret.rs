//! `POST /api/webhook_endpoints/{id}/roll_secret`: a new signing secret,
//! shown in the answer; the one before still signs beside it (the
//! `webhook-signature` header lists both) for `OVERLAP`, so receivers can
//! move to the new one without refusing a delivery.

use diesel::PgConnection;

use super::{destination, ActionParams, DestinationAction};
use crate::idempotency::StoredResponse;
use crate::ids::UserId;
use crate::service_error::ServiceError;
use crate::user_webhooks::model;
use crate::user_webhooks::signing::new_secret;
use crate::wire;

/// How long the secret before a roll still signs.
pub const OVERLAP: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

crate::recovery_points! {
    /// How far a roll has got: it is written in the claim's transaction.
    pub enum RecoveryPoint for "webhook_endpoints.roll_secret" {
        /// The new secret is written; the answer is not stored yet.
        Rolled = "rolled", atomic;
    }
}

pub struct RollSecret;

/// The endpoint this action is.
pub type RollSecretEndpoint = super::Action<RollSecret>;

impl DestinationAction for RollSecret {
    type Point = RecoveryPoint;
    const WRITTEN: RecoveryPoint = RecoveryPoint::Rolled;

    fn write(
        conn: &mut PgConnection,
        user: UserId,
        params: &ActionParams,
    ) -> Result<bool, ServiceError> {
        Ok(model::roll_secret(
            conn,
            user,
            params.endpoint_id,
            &new_secret(),
            OVERLAP,
        )?)
    }

    fn answer(
        conn: &mut PgConnection,
        user: UserId,
        params: &ActionParams,
    ) -> Result<StoredResponse, ServiceError> {
        let endpoint = destination(conn, user, params)?;
        Ok(wire::answer::ok(endpoint.json(true).body()))
    }
}
