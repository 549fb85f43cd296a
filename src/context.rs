//! What every service call needs, built once at start-up.

use std::sync::Arc;
use uuid::Uuid;

use crate::db::DbPool;
use crate::idempotency::KeyPolicy;
use crate::payments::PaymentGateway;

pub struct ServiceContext {
    pub pool: DbPool,
    pub gateway: Arc<dyn PaymentGateway>,
    pub key_policy: KeyPolicy,
    /// Part of every derived gateway key.
    pub installation_id: Uuid,
}
