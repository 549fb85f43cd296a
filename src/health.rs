//! `/healthz` (the process is up) and `/readyz` (it can serve: the database
//! answers and every migration is applied).

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::context::ServiceContext;
use crate::db;
use crate::problem::{Problem, ProblemKind};

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "ok" }))
}

pub async fn readyz(context: web::Data<ServiceContext>) -> Result<HttpResponse, Problem> {
    let ready = web::block(move || -> anyhow::Result<bool> {
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
        Err(err) => Err(Problem::new(
            ProblemKind::ServiceUnavailable,
            format!("the database is unreachable: {err}"),
        )),
    }
}
