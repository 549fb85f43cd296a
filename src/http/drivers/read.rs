//! `GET /api/drivers` and `GET /api/drivers/{id}`: the platform's key only.

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::context::ServiceContext;
use crate::drivers::{model, reads};
use crate::http::auth::Caller;
use crate::http::openapi_components::{ApiProblems, ProblemDocument};
use crate::http::pagination::ListQuery;
use crate::http::reading::as_caller;
use crate::public_ids::DriverPublicId;
use crate::service_error::ServiceError;
use crate::wire::driver::DriverJson;
use crate::wire::problem::Problem;

/// A page of drivers, newest first.
#[derive(Serialize, ToSchema)]
#[schema(as = DriverPage)]
pub struct Page {
    data: Vec<DriverJson>,
    has_more: bool,
}

/// The platform's drivers, newest first, with their status and balances.
#[utoipa::path(
    get,
    path = "/api/drivers",
    tag = "drivers",
    params(ListQuery),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "A page of drivers", body = Page),
        (status = 400, description = "Invalid `limit` or cursor, or a cursor that names no driver", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 403, description = "Not the platform's key", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn list_drivers(
    caller: Caller,
    query: web::Query<ListQuery>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let query = query.into_inner();
    let (data, has_more) = as_caller(context, caller, move |conn, user| {
        user.platform_only(reads::READ_DRIVERS)?;
        let (limit, cursor) = query.checked()?;
        reads::page(conn, limit, cursor)
    })
    .await?;
    Ok(HttpResponse::Ok().json(Page { data, has_more }))
}

/// One driver, with their status and balances.
#[utoipa::path(
    get,
    path = "/api/drivers/{id}",
    tag = "drivers",
    params(("id" = String, Path, description = "The driver's id (`drv_...`)", pattern = "^drv_[a-z2-7]{29}$")),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The driver", body = DriverJson),
        (status = 403, description = "Not the platform's key", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 404, description = "No such driver", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn get_driver(
    caller: Caller,
    driver_id: web::Path<DriverPublicId>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let driver_id = driver_id.into_inner();
    let driver = as_caller(context, caller, move |conn, user| {
        user.platform_only(reads::READ_DRIVERS)?;
        let driver = model::find(conn, driver_id)?.ok_or(ServiceError::NotFound)?;
        Ok(reads::json(conn, driver, None)?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(driver))
}
