//! `GET /api/rides/{id}/refunds/{refund_id}`

use actix_web::http::header;
use actix_web::{web, HttpResponse};

use crate::context::ServiceContext;
use crate::http::auth::Caller;
use crate::http::openapi_components::{ApiProblems, ProblemDocument};
use crate::http::reading::as_caller;
use crate::public_ids::{PathId, RefundPublicId, RidePublicId};
use crate::refunds::model;
use crate::rides;
use crate::service_error::ServiceError;
use crate::wire::problem::Problem;
use crate::wire::refund::RefundJson;

/// One refund of one of the caller's rides (where `Location` points).
#[utoipa::path(
    get,
    path = "/api/rides/{id}/refunds/{refund_id}",
    tag = "refunds",
    params(
        ("id" = String, Path, description = "The ride's id (`ride_...`), or the integer of one made before those", pattern = "^(ride_[a-z2-7]{29}|[0-9]+)$"),
        ("refund_id" = String, Path, description = "The refund's id (`rfnd_...`), or the integer of one made before those", pattern = "^(rfnd_[a-z2-7]{29}|[0-9]+)$"),
    ),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The refund", body = RefundJson),
        (status = 404, description = "No such refund of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn get_refund(
    caller: Caller,
    path: web::Path<(PathId<RidePublicId>, PathId<RefundPublicId>)>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let (ride_id, refund_id) = path.into_inner();
    let refund = as_caller(context, caller, move |conn, user| {
        let ride =
            rides::reads::find_for_user(conn, user.id, ride_id)?.ok_or(ServiceError::NotFound)?;
        model::find_of_ride(conn, &ride, refund_id)?.ok_or(ServiceError::NotFound)
    })
    .await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .body(refund.json().body()))
}
