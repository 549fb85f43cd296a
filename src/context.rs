//! What every service call needs, built once at start-up.

use std::sync::Arc;
use uuid::Uuid;

use crate::config::DriverContext;
use crate::db::DbPool;
use crate::http_client::destination::DestinationPolicy;
use crate::idempotency::endpoint::FlowContext;
use crate::idempotency::KeyPolicy;
use crate::payments::PaymentGateway;
use crate::public_ids::IdSecret;

pub struct ServiceContext {
    pub pool: DbPool,
    pub gateway: Arc<dyn PaymentGateway>,
    pub key_policy: KeyPolicy,
    /// Part of every derived gateway key.
    pub installation_id: Uuid,
    /// What the ids of the rows a request makes are derived under.
    pub id_secret: IdSecret,
    /// Where the rider's browser lands after authenticating a payment:
    /// `PUBLIC_BASE_URL` and `/payments/return`.
    pub return_url: String,
    /// Where users' webhooks may go.
    pub destinations: DestinationPolicy,
    /// The platform's country and commission, where drivers' onboarding
    /// pages are (`PUBLIC_BASE_URL/drivers/onboarding`), and whether the
    /// gateway's key is live (Connect events of the other mode are not ours).
    pub drivers: DriverContext,
}

impl FlowContext for ServiceContext {
    fn pool(&self) -> &DbPool {
        &self.pool
    }

    fn key_policy(&self) -> &KeyPolicy {
        &self.key_policy
    }

    fn installation_id(&self) -> Uuid {
        self.installation_id
    }
}
