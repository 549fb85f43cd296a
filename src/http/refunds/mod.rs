//! The refunds routes, one file each, under a ride.

pub(crate) mod create;
pub(crate) mod get;
pub(crate) mod list;

use crate::http::routes::Routes;
use crate::refunds::create::RefundEndpoint;
use actix_web::web;
use utoipa::OpenApi;

use crate::http::routing::method_not_allowed;

/// The routes' part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(create::create_refund, list::list_refunds, get::get_refund))]
pub struct Api;

impl Routes for RefundEndpoint {
    fn configure(cfg: &mut web::ServiceConfig) {
        cfg.service(
            web::resource("/rides/{id}/refunds")
                .route(web::post().to(create::create_refund))
                .route(web::get().to(list::list_refunds))
                .default_service(method_not_allowed("GET, POST")),
        )
        .service(
            web::resource("/rides/{id}/refunds/{refund_id}")
                .route(web::get().to(get::get_refund))
                .default_service(method_not_allowed("GET")),
        );
    }

    fn openapi() -> utoipa::openapi::OpenApi {
        Api::openapi()
    }
}
