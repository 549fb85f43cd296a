//! What every service call needs, built once at start-up.

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use crate::db::DbPool;
use crate::payments::PaymentGateway;

pub struct ServiceContext {
    pub pool: DbPool,
    pub gateway: Arc<dyn PaymentGateway>,
    pub lease_timeout: Duration,
    /// Part of every derived gateway key.
    pub installation_id: Uuid,
}
