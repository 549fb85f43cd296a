//! The drivers routes, one file each.

pub(crate) mod create;
pub(crate) mod onboarding_link;
pub(crate) mod read;

use actix_web::web;
use utoipa::OpenApi;

use crate::drivers::create::DriverEndpoint;
use crate::http::routes::Routes;
use crate::http::routing::method_not_allowed;

/// The routes' part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(create::create_driver, read::list_drivers, read::get_driver))]
pub struct Api;

impl Routes for DriverEndpoint {
    fn configure(cfg: &mut web::ServiceConfig) {
        cfg.service(
            web::resource("/drivers")
                .route(web::post().to(create::create_driver))
                .route(web::get().to(read::list_drivers))
                .default_service(method_not_allowed("GET, POST")),
        )
        .service(
            web::resource("/drivers/{id}")
                .route(web::get().to(read::get_driver))
                .default_service(method_not_allowed("GET")),
        );
    }

    fn openapi() -> utoipa::openapi::OpenApi {
        Api::openapi()
    }
}
