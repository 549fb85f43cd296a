//! `GET /api/rides/{id}/refunds`

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::context::ServiceContext;
use crate::http::auth::Caller;
use crate::http::openapi_components::{ApiProblems, ProblemDocument};
use crate::http::reading::as_caller;
use crate::public_ids::{PathId, RidePublicId};
use crate::refunds::model::{self, RefundWithParts};
use crate::rides;
use crate::service_error::ServiceError;
use crate::wire::problem::Problem;
use crate::wire::refund::RefundJson;

/// A ride's refunds, oldest first. A ride has few, so they come in one page
/// (`has_more` is always false), shaped like the ride list so a client can
/// page both the same way should that change.
#[derive(Serialize, ToSchema)]
#[schema(as = RefundPage)]
pub struct Page {
    #[schema(value_type = Vec<RefundJson>)]
    data: Vec<RefundWithParts>,
    has_more: bool,
}

/// The refunds of one of the caller's rides, oldest first: those made here
/// and those made elsewhere (learnt from Stripe webhooks), in any status.
#[utoipa::path(
    get,
    path = "/api/rides/{id}/refunds",
    tag = "refunds",
    params(("id" = String, Path, description = "The ride's id (`ride_...`), or the integer of one made before those", pattern = "^(ride_[a-z2-7]{29}|[0-9]+)$")),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The ride's refunds", body = Page),
        (status = 404, description = "No such ride of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn list_refunds(
    caller: Caller,
    ride_id: web::Path<PathId<RidePublicId>>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let ride_id = ride_id.into_inner();
    let refunds = as_caller(context, caller, move |conn, user| {
        let ride =
            rides::reads::find_for_user(conn, user.id, ride_id)?.ok_or(ServiceError::NotFound)?;
        Ok(model::list_for_ride(conn, &ride)?)
    })
    .await?;
    Ok(HttpResponse::Ok().json(Page {
        data: refunds,
        has_more: false,
    }))
}
