//! Each idempotent endpoint's routes, under `/api`, the reads of its
//! resource included, and its part of the OpenAPI document: what an
//! endpoint's route file gives by implementing [`Routes`] for the
//! endpoint's type, listed by `crate::for_each_endpoint!`.

use actix_web::web::ServiceConfig;

/// An endpoint's routes and its OpenAPI part.
pub trait Routes {
    fn configure(config: &mut ServiceConfig);
    fn openapi() -> utoipa::openapi::OpenApi;
}

/// One endpoint's routes and OpenAPI part, as the server and the document
/// take them.
pub struct Routed {
    pub routes: fn(&mut ServiceConfig),
    pub openapi: fn() -> utoipa::openapi::OpenApi,
}

impl Routed {
    fn of<E: Routes>() -> Routed {
        Routed {
            routes: E::configure,
            openapi: E::openapi,
        }
    }
}

/// Every idempotent endpoint's routes.
pub fn endpoints() -> Vec<Routed> {
    macro_rules! routed {
        ($($endpoint:ty),* $(,)?) => { vec![$(Routed::of::<$endpoint>()),*] };
    }
    crate::for_each_endpoint!(routed)
}
