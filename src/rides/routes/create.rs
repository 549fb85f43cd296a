//! `POST /api/rides`

use actix_web::{web, HttpRequest, HttpResponse};

use crate::auth::AuthenticatedUser;
use crate::context::ServiceContext;
use crate::crash;
use crate::idempotency::http::{idempotency_key, respond};
use crate::json_body::{read_json, MAX_BODY_BYTES};
use crate::problem::Problem;
use crate::rides::request::RideParams;
use crate::rides::service;

pub async fn create_ride(
    AuthenticatedUser(user): AuthenticatedUser,
    request: HttpRequest,
    payload: web::Payload,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let body = read_json(&request, payload, MAX_BODY_BYTES).await?;
    let key = idempotency_key(&request)?;
    let params = RideParams::parse(&body).map_err(Problem::invalid)?;
    let path = request.path().to_owned();
    let outcome =
        web::block(move || service::create_ride(&context, &user, &key, &path, &params)).await??;
    if !outcome.replayed {
        crash::point(crash::AFTER_FINISHED);
    }
    Ok(respond(&outcome.response, outcome.replayed))
}
