//! `GET /api/rides/{id}`

use actix_web::http::header;
use actix_web::{web, HttpResponse};

use crate::context::ServiceContext;
use crate::drivers::pay;
use crate::http::auth::Caller;
use crate::http::openapi_components::{ApiProblems, ProblemDocument};
use crate::http::request_id;
use crate::public_ids::{PathId, RidePublicId};
use crate::rides::reads;
use crate::service_error::ServiceError;
use crate::users::Role;
use crate::wire::problem::Problem;
use crate::wire::ride::RideJson;

/// One of the caller's rides (the platform's key: any ride, its `driver`
/// with their pay). Another user's ride is a 404, as if it did not exist.
#[utoipa::path(
    get,
    path = "/api/rides/{id}",
    tag = "rides",
    params(("id" = String, Path, description = "The ride's id (`ride_...`), or the integer of one made before those", pattern = "^(ride_[a-z2-7]{29}|[0-9]+)$")),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The ride", body = RideJson),
        (status = 404, description = "No such ride of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn get_ride(
    caller: Caller,
    ride_id: web::Path<PathId<RidePublicId>>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let ride_id = ride_id.into_inner();
    let body = request_id::block(move || -> Result<_, ServiceError> {
        let mut conn = context.pool.get()?;
        let (role, ride) = reads::find_for_api_key(&mut conn, caller.key_hash(), ride_id)?
            .ok_or(ServiceError::Unauthorized)?;
        let ride = ride.ok_or(ServiceError::NotFound)?;
        // The platform reads the driver's pay: a statement of its own, for
        // a ride that has a driver only.
        if role == Role::Platform && ride.driver.is_some() {
            let pay = pay::of_ride(&mut conn, ride.id)?;
            return Ok(reads::platform_view(&ride, pay).body());
        }
        Ok(ride.json().body())
    })
    .await??;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .body(body))
}
