//! What every service call needs, built once at start-up.

use std::sync::Arc;
use uuid::Uuid;

use crate::auth::Caller;
use crate::db::DbPool;
use crate::idempotency::KeyPolicy;
use crate::payments::PaymentGateway;
use crate::users::User;

pub struct ServiceContext {
    pub pool: DbPool,
    pub gateway: Arc<dyn PaymentGateway>,
    pub key_policy: KeyPolicy,
    /// Part of every derived gateway key.
    pub installation_id: Uuid,
}

/// Authenticates `caller` and runs `work` for the user on the same pooled
/// connection, on a blocking thread (as every Diesel call must be), for a
/// handler that reads.
pub async fn as_caller<T, F>(
    context: actix_web::web::Data<ServiceContext>,
    caller: Caller,
    work: F,
) -> Result<T, crate::problem::Problem>
where
    T: Send + 'static,
    F: FnOnce(&mut diesel::PgConnection, User) -> Result<T, crate::service_error::ServiceError>
        + Send
        + 'static,
{
    Ok(crate::request_id::block(move || {
        let mut conn = context.pool.get()?;
        let user = caller.authenticate(&mut conn)?;
        work(&mut conn, user)
    })
    .await??)
}
