//! `GET /api/webhook_endpoints/{id}/deliveries?limit=N&before_id=M`

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::context::ServiceContext;
use crate::http::auth::{as_caller, Caller};
use crate::http::openapi_components::{ApiProblems, ProblemDocument};
use crate::http::pagination::{checked_limit, page};
use crate::service_error::ServiceError;
use crate::user_webhooks::{deliveries, model};
use crate::wire::problem::Problem;
use crate::wire::webhook_delivery::DeliveryJson;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    /// 1 to 100, default 20.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
    /// Only deliveries older than this one (pagination).
    before_id: Option<i64>,
}

/// A page of deliveries, newest first.
#[derive(Serialize, ToSchema)]
#[schema(as = WebhookDeliveryPage)]
pub struct Page {
    data: Vec<DeliveryJson>,
    has_more: bool,
}

/// The deliveries to one of the caller's destinations, newest first, each
/// with every attempt: when, the HTTP status or the error, how long.
#[utoipa::path(
    get,
    path = "/api/webhook_endpoints/{id}/deliveries",
    tag = "webhooks",
    params(("id" = i64, Path, description = "The destination's id"), DeliveriesQuery),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "A page of deliveries", body = Page),
        (status = 404, description = "No such destination of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn list_deliveries(
    caller: Caller,
    id: web::Path<i64>,
    query: web::Query<DeliveriesQuery>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let id = id.into_inner();
    let (limit, before_id) = (query.limit, query.before_id);
    let (rows, limit) = as_caller(context, caller, move |conn, user| {
        model::find_for_user(conn, user.id, id)?.ok_or(ServiceError::NotFound)?;
        let limit = checked_limit(limit)?;
        Ok((deliveries::list(conn, id, limit, before_id)?, limit))
    })
    .await?;
    let (data, has_more) = page(rows, limit);
    Ok(HttpResponse::Ok().json(Page { data, has_more }))
}
