//! `GET /api/rides/{id}`

use actix_web::http::header;
use actix_web::{web, HttpResponse};

use crate::auth::AuthenticatedUser;
use crate::context::ServiceContext;
use crate::problem::Problem;
use crate::rides::model;
use crate::service_error::ServiceError;

pub async fn get_ride(
    AuthenticatedUser(user): AuthenticatedUser,
    ride_id: web::Path<i64>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let ride_id = ride_id.into_inner();
    let ride = web::block(move || -> Result<_, ServiceError> {
        let mut conn = context.pool.get()?;
        model::find_for_user(&mut conn, user.id, ride_id)?.ok_or(ServiceError::NotFound)
    })
    .await??;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .body(ride.to_json()))
}
