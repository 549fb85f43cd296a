//! `GET /api/rides?limit=N&starting_after=ID`

use std::collections::HashMap;

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::context::ServiceContext;
use crate::drivers::pay;
use crate::http::auth::Caller;
use crate::http::openapi_components::{ApiProblems, ProblemDocument};
use crate::http::pagination::ListQuery;
use crate::http::reading::as_caller;
use crate::ids::RideId;
use crate::rides::reads;
use crate::users::Role;
use crate::wire::problem::Problem;
use crate::wire::ride::RideJson;

/// A page of rides, newest first.
#[derive(Serialize, ToSchema)]
#[schema(as = RidePage)]
pub struct Page<'a> {
    data: Vec<RideJson<'a>>,
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
    let (rides, mut pays, has_more) = as_caller(context, caller, move |conn, user| {
        let (limit, cursor) = query.checked()?;
        let (rides, has_more) = reads::page_for(conn, &user, limit, cursor)?;
        // The platform reads the drivers' pay: one statement for the page,
        // when any ride on it has a driver.
        let driven: Vec<RideId> = rides
            .iter()
            .filter(|ride| user.role == Role::Platform && ride.driver.is_some())
            .map(|ride| ride.id)
            .collect();
        let pays = match driven.is_empty() {
            true => HashMap::new(),
            false => pay::of_rides(conn, &driven)?,
        };
        Ok((rides, pays, has_more))
    })
    .await?;
    let data = rides
        .iter()
        .map(|ride| match pays.remove(&ride.id) {
            Some(driver) => reads::platform_view(ride, Some(driver)),
            None => ride.json(),
        })
        .collect();
    Ok(HttpResponse::Ok().json(Page { data, has_more }))
}
