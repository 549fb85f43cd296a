//! What a handler that reads does with its caller: authenticates them and
//! runs its work on one pooled connection, on a blocking thread.

use actix_web::web;
use diesel::PgConnection;

use super::auth::Caller;
use crate::context::ServiceContext;
use crate::service_error::ServiceError;
use crate::users::User;
use crate::wire::problem::Problem;

/// Authenticates `caller` and runs `work` for the user on the same pooled
/// connection, on a blocking thread (as every Diesel call must be), for a
/// handler that reads.
pub async fn as_caller<T, F>(
    context: web::Data<ServiceContext>,
    caller: Caller,
    work: F,
) -> Result<T, Problem>
where
    T: Send + 'static,
    F: FnOnce(&mut PgConnection, User) -> Result<T, ServiceError> + Send + 'static,
{
    Ok(super::request_id::block(move || {
        let mut conn = context.pool.get()?;
        let user = caller.authenticate(&mut conn)?;
        work(&mut conn, user)
    })
    .await??)
}
