//! Bearer API key authentication for `/api/*`.

use std::future::Future;
use std::pin::Pin;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{web, FromRequest, HttpRequest};

use crate::context::ServiceContext;
use crate::problem::{Problem, ProblemKind};
use crate::rate_limit::RateLimiter;
use crate::request_id;
use crate::service_error::ServiceError;
use crate::users::{self, User};

/// The caller, authenticated by `Authorization: Bearer <api key>`.
#[derive(Debug, Clone)]
pub struct AuthenticatedUser(pub User);

fn unauthorized(detail: &str) -> Problem {
    Problem::new(ProblemKind::Unauthorized, detail)
        .with_header(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))
}

fn bearer_token(request: &HttpRequest) -> Option<String> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_owned())
}

impl FromRequest for AuthenticatedUser {
    type Error = Problem;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Problem>>>>;

    fn from_request(request: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let token = bearer_token(request);
        let context = request.app_data::<web::Data<ServiceContext>>().cloned();
        let limiter = request.app_data::<web::Data<RateLimiter>>().cloned();
        Box::pin(async move {
            let token = token.ok_or_else(|| unauthorized("a bearer API key is required"))?;
            let context = context.expect("ServiceContext is registered at start-up");
            let limiter = limiter.expect("RateLimiter is registered at start-up");
            // Hashed once: the limiter's key and the lookup's.
            let key_hash = users::hash_api_key(&token);
            if let Err(wait) = limiter.check(&key_hash) {
                return Err(Problem::new(
                    ProblemKind::RateLimited,
                    "too many requests for this API key; slow down",
                )
                .with_retry_after(wait));
            }
            let user = request_id::block(move || -> Result<_, ServiceError> {
                let mut conn = context.pool.get()?;
                Ok(users::find_by_api_key_hash(&mut conn, &key_hash)?)
            })
            .await??;
            user.map(AuthenticatedUser)
                .ok_or_else(|| unauthorized("the API key is not valid"))
        })
    }
}
