//! `GET /api/rides?limit=N&before_id=M`

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::context::ServiceContext;
use crate::http::auth::{as_caller, Caller};
use crate::http::openapi_components::{ApiProblems, ProblemDocument};
use crate::http::pagination::{checked_limit, page};
use crate::ids::RideId;
use crate::rides::model::Ride;
use crate::rides::reads;
use crate::wire::problem::Problem;
use crate::wire::ride::RideJson;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// 1 to 100, default 20.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
    /// Only rides older than this one (pagination).
    #[param(value_type = Option<i64>)]
    before_id: Option<RideId>,
}

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
        (status = 400, description = "Invalid `limit` or `before_id`", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn list_rides(
    caller: Caller,
    query: web::Query<ListQuery>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let (limit, before_id) = (query.limit, query.before_id);
    let (rides, limit) = as_caller(context, caller, move |conn, user| {
        let limit = checked_limit(limit)?;
        Ok((
            reads::list_for_user(conn, user.id, limit, before_id)?,
            limit,
        ))
    })
    .await?;
    let (data, has_more) = page(rides, limit);
    Ok(HttpResponse::Ok().json(Page { data, has_more }))
}
