//! The rides routes, one file each.

pub(crate) mod assign;
pub(crate) mod cancel;
pub(crate) mod complete;
pub(crate) mod create;
pub(crate) mod get;
pub(crate) mod list;
pub(crate) mod tip;

use crate::http::routes::Routes;
use crate::rides::create::RideEndpoint;
use actix_web::web;
use utoipa::OpenApi;

use crate::http::routing::method_not_allowed;

/// The routes' part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(create::create_ride, list::list_rides, get::get_ride))]
pub struct Api;

impl Routes for RideEndpoint {
    fn configure(cfg: &mut web::ServiceConfig) {
        cfg.service(
            web::resource("/rides")
                .route(web::post().to(create::create_ride))
                .route(web::get().to(list::list_rides))
                .default_service(method_not_allowed("GET, POST")),
        )
        .service(
            web::resource("/rides/{id}")
                .route(web::get().to(get::get_ride))
                .default_service(method_not_allowed("GET")),
        );
    }

    fn openapi() -> utoipa::openapi::OpenApi {
        Api::openapi()
    }
}
