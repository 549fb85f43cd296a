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

/// Runs `work` on a pooled connection, on a blocking thread (as every Diesel
/// call must be), for a handler that reads.
pub async fn with_connection<T, F>(
    context: actix_web::web::Data<ServiceContext>,
    work: F,
) -> Result<T, crate::problem::Problem>
where
    T: Send + 'static,
    F: FnOnce(&mut diesel::PgConnection) -> Result<T, crate::service_error::ServiceError>
        + Send
        + 'static,
{
    Ok(crate::request_id::block(move || work(&mut *context.pool.get()?)).await??)
}
