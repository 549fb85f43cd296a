//! `GET /api/webhook_endpoints`, `GET` and `DELETE
//! /api/webhook_endpoints/{id}`: the caller's own destinations, without
//! their secrets.

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::context::ServiceContext;
use crate::http::auth::Caller;
use crate::http::openapi_components::{ApiProblems, ProblemDocument};
use crate::http::reading::as_caller;
use crate::public_ids::{DestinationPublicId, PathId};
use crate::service_error::ServiceError;
use crate::user_webhooks::model::{self, Destination};
use crate::wire::destination::DestinationJson;
use crate::wire::problem::Problem;

#[derive(Serialize, ToSchema)]
#[schema(as = WebhookEndpointPage)]
pub struct Page<'a> {
    data: Vec<DestinationJson<'a>>,
    has_more: bool,
}

/// The caller's destinations, oldest first, in one page (at most 16).
#[utoipa::path(
    get,
    path = "/api/webhook_endpoints",
    tag = "webhooks",
    security(("api_key" = [])),
    responses((status = 200, description = "The caller's destinations", body = Page), ApiProblems)
)]
pub async fn list_webhook_endpoints(
    caller: Caller,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let endpoints = as_caller(context, caller, move |conn, user| {
        Ok(model::list_for_user(conn, user.id)?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(Page {
        data: endpoints
            .iter()
            .map(|endpoint| endpoint.json(false))
            .collect(),
        has_more: false,
    }))
}

/// One of the caller's destinations.
#[utoipa::path(
    get,
    path = "/api/webhook_endpoints/{id}",
    tag = "webhooks",
    params(("id" = String, Path, description = "The destination's id (`whep_...`), or the integer of one registered before those", pattern = "^(whep_[a-z2-7]{29}|[0-9]+)$")),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The destination", body = DestinationJson),
        (status = 404, description = "No such destination of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn get_webhook_endpoint(
    caller: Caller,
    id: web::Path<PathId<DestinationPublicId>>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let id = id.into_inner();
    let endpoint: Destination = as_caller(context, caller, move |conn, user| {
        model::find_for_user(conn, user.id, id)?.ok_or(ServiceError::NotFound)
    })
    .await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .body(endpoint.json(false).body()))
}

/// Delete one of the caller's destinations, and its deliveries with it.
#[utoipa::path(
    delete,
    path = "/api/webhook_endpoints/{id}",
    tag = "webhooks",
    params(("id" = String, Path, description = "The destination's id (`whep_...`), or the integer of one registered before those", pattern = "^(whep_[a-z2-7]{29}|[0-9]+)$")),
    security(("api_key" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such destination of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn delete_webhook_endpoint(
    caller: Caller,
    id: web::Path<PathId<DestinationPublicId>>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let id = id.into_inner();
    as_caller(
        context,
        caller,
        move |conn, user| match model::delete_for_user(conn, user.id, id)? {
            true => Ok(()),
            false => Err(ServiceError::NotFound),
        },
    )
    .await?;
    Ok(HttpResponse::NoContent().finish())
}
