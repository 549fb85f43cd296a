//! Bearer API key authentication for `/api/*`.
//!
//! Split in two so that a request takes one pooled connection, not two: the
//! extractor checks the header and the rate limit, which need no database,
//! and the handler authenticates on the connection it takes for its work,
//! before doing anything else with it.

use std::future::{ready, Ready};

use actix_web::http::header::{self, HeaderValue};
use actix_web::{web, FromRequest, HttpRequest};
use diesel::PgConnection;

use crate::problem::{Problem, ProblemKind};
use crate::rate_limit::RateLimiter;
use crate::service_error::ServiceError;
use crate::users::{self, User};

/// A caller with a well-formed bearer API key, within its rate limit, not
/// yet authenticated: see [`Caller::authenticate`].
#[derive(Debug, Clone)]
pub struct Caller {
    key_hash: Vec<u8>,
}

impl Caller {
    /// The user the API key belongs to, or `ServiceError::Unauthorized`.
    pub fn authenticate(&self, conn: &mut PgConnection) -> Result<User, ServiceError> {
        users::find_by_api_key_hash(conn, &self.key_hash)?.ok_or(ServiceError::Unauthorized)
    }
}

/// The 401 of the contract, for a missing or unknown API key.
pub fn unauthorized(detail: &str) -> Problem {
    Problem::new(ProblemKind::Unauthorized, detail)
        .with_header(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))
}

fn bearer_token(request: &HttpRequest) -> Option<&str> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

impl FromRequest for Caller {
    type Error = Problem;
    type Future = Ready<Result<Self, Problem>>;

    fn from_request(request: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        ready(caller(request))
    }
}

fn caller(request: &HttpRequest) -> Result<Caller, Problem> {
    let token =
        bearer_token(request).ok_or_else(|| unauthorized("a bearer API key is required"))?;
    let limiter = request
        .app_data::<web::Data<RateLimiter>>()
        .expect("RateLimiter is registered at start-up");
    // Hashed once: the limiter's key and the lookup's.
    let key_hash = users::hash_api_key(token);
    if let Err(wait) = limiter.check(&key_hash) {
        return Err(Problem::new(
            ProblemKind::RateLimited,
            "too many requests for this API key; slow down",
        )
        .with_retry_after(wait));
    }
    Ok(Caller { key_hash })
}
