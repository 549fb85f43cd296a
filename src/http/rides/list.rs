//! `GET /api/rides?limit=N&starting_after=ID`

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::context::ServiceContext;
use crate::http::auth::Caller;
use crate::http::openapi_components::{ApiProblems, ProblemDocument};
use crate::http::pagination::ListQuery;
use crate::http::reading::as_caller;
use crate::rides::model::Ride;
use crate::rides::reads;
use crate::wire::problem::Problem;
use crate::wire::ride::RideJson;

/// A page of rides, newest first.
#[derive(Serialize, ToSchema)]
#[schema(as = RidePage)]
pub struct Page {
    #[schema(value_type = Vec<RideJson>)]
    data: Vec<Ride>,
    has_more: bool,
}

/// The caller's rides, newest first.
#[utoipa::path(
    get,
    path = "/api/rides",
    tag = "rides",
    params(ListQuery),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "A page of rides", body = Page),
        (status = 400, description = "Invalid `limit` or cursor, a cursor that names no ride of the caller's, or `before_id`", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn list_rides(
    caller: Caller,
    query: web::Query<ListQuery>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let query = query.into_inner();
    let (data, has_more) = as_caller(context, caller, move |conn, user| {
        let (limit, cursor) = query.checked()?;
        reads::page_for(conn, &user, limit, cursor)
    })
    .await?;
    Ok(HttpResponse::Ok().json(Page { data, has_more }))
}
