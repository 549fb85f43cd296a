//! The webhook endpoints routes, one file each: a user's destinations of
//! their rides' events.

pub(crate) mod actions;
pub(crate) mod create;
pub(crate) mod deliveries;
pub(crate) mod read;
pub(crate) mod update;

use crate::http::routes::Routes;
use crate::user_webhooks::register::RegisterDestination;
use actix_web::web;
use utoipa::OpenApi;

use crate::http::routing::method_not_allowed;

/// The routes' part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(
    create::create_webhook_endpoint,
    read::list_webhook_endpoints,
    read::get_webhook_endpoint,
    read::delete_webhook_endpoint,
    update::update_webhook_endpoint,
    deliveries::list_deliveries,
))]
pub struct Api;

impl Routes for RegisterDestination {
    fn configure(cfg: &mut web::ServiceConfig) {
        cfg.service(
            web::resource("/webhook_endpoints")
                .route(web::post().to(create::create_webhook_endpoint))
                .route(web::get().to(read::list_webhook_endpoints))
                .default_service(method_not_allowed("GET, POST")),
        )
        .service(
            web::resource("/webhook_endpoints/{id}")
                .route(web::get().to(read::get_webhook_endpoint))
                .route(web::patch().to(update::update_webhook_endpoint))
                .route(web::delete().to(read::delete_webhook_endpoint))
                .default_service(method_not_allowed("GET, PATCH, DELETE")),
        )
        .service(
            web::resource("/webhook_endpoints/{id}/deliveries")
                .route(web::get().to(deliveries::list_deliveries))
                .default_service(method_not_allowed("GET")),
        );
    }

    fn openapi() -> utoipa::openapi::OpenApi {
        Api::openapi()
    }
}
