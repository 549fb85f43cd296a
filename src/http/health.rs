//! `/healthz` (the process is up) and `/readyz` (it can serve: the database
//! answers and every migration is applied).

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::context::ServiceContext;
use crate::db;
use crate::http::openapi_components::ProblemDocument;
use crate::http::request_id;
use crate::wire::problem::{Problem, ProblemKind};

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "Up", content_type = "application/json")))]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "ok" }))
}

/// The database answers and every migration is applied.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses(
        (status = 200, description = "Ready", content_type = "application/json"),
        (status = 429, description = "Too many requests from this address", body = ProblemDocument, content_type = "application/problem+json",
            headers(("Retry-After" = String))),
        (status = 503, description = "Not ready", body = ProblemDocument, content_type = "application/problem+json"),
    ))]
pub async fn readyz(context: web::Data<ServiceContext>) -> Result<HttpResponse, Problem> {
    let ready = request_id::block(move || -> anyhow::Result<bool> {
        let mut conn = context.pool.get()?;
        db::migrations_applied(&mut conn)
    })
    .await?;
    match ready {
        Ok(true) => Ok(HttpResponse::Ok().json(json!({ "status": "ready" }))),
        Ok(false) => Err(Problem::new(
            ProblemKind::ServiceUnavailable,
            "database migrations are pending",
        )),
        Err(err) => {
            // The driver's message names hosts and ports: the log's, not the
            // caller's.
            log::warn!("readyz: the database is unreachable: {err:#}");
            Err(Problem::new(
                ProblemKind::ServiceUnavailable,
                "database unreachable",
            ))
        }
    }
}
