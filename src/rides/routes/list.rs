//! `GET /api/rides?limit=N&before_id=M`

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};

use crate::auth::AuthenticatedUser;
use crate::context::ServiceContext;
use crate::problem::Problem;
use crate::rides::model::{self, Ride};
use crate::service_error::ServiceError;
use crate::validation::FieldError;

const DEFAULT_LIMIT: i64 = 20;
const MAX_LIMIT: i64 = 100;

#[derive(Debug, Deserialize)]
pub struct ListQuery {
    limit: Option<i64>,
    before_id: Option<i64>,
}

#[derive(Serialize)]
struct Page {
    data: Vec<Ride>,
    has_more: bool,
}

pub async fn list_rides(
    AuthenticatedUser(user): AuthenticatedUser,
    query: web::Query<ListQuery>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(Problem::invalid(vec![FieldError::new(
            "limit",
            format!("must be between 1 and {MAX_LIMIT}"),
        )]));
    }
    let before_id = query.before_id;
    let mut rides = web::block(move || -> Result<_, ServiceError> {
        let mut conn = context.pool.get()?;
        Ok(model::list_for_user(&mut conn, user.id, limit, before_id)?)
    })
    .await??;
    let has_more = rides.len() as i64 > limit;
    rides.truncate(limit as usize);
    Ok(HttpResponse::Ok().json(Page {
        data: rides,
        has_more,
    }))
}
