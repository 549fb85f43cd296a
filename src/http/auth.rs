//! Bearer API key authentication for `/api/*`, in two steps:
//!
//! - the extractor ([`Caller`]) refuses a missing or unknown key before the
//!   handler runs, and so before a body is read: a stranger cannot hold a
//!   connection open by trickling a body with a made-up key. A key verified in
//!   the last [`KNOWN_FOR`] passes from memory, so this costs a request with a
//!   valid key no database work; every other request spends one of its client
//!   address's allowance first, so random keys cannot flood the lookup.
//! - the handler authenticates on the connection it takes for its work
//!   ([`Caller::authenticate`]): that is the authority, so a key revoked a
//!   moment ago is refused there, whatever the extractor remembered.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix_web::http::header;
use actix_web::{web, FromRequest, HttpRequest};
use diesel::PgConnection;
use futures_util::future::LocalBoxFuture;

use crate::db::DbPool;
use crate::http::rate_limit::{self, RateLimiter};
use crate::service_error::ServiceError;
use crate::users::{self, User};
use crate::wire::problem::{Problem, ProblemKind};

/// How long a verified key is let through the extractor without a lookup.
pub const KNOWN_FOR: Duration = Duration::from_secs(60);

/// At most this many verified keys are remembered; past it, expired ones are
/// dropped, and if none has expired the new one is simply looked up again
/// next time. Only valid keys enter, so strangers cannot fill it.
const KNOWN_CAPACITY: usize = 10_000;

/// A caller whose bearer API key was valid a moment ago and who is within
/// its rate limit; [`Caller::authenticate`] makes it a user.
#[derive(Debug, Clone)]
pub struct Caller {
    key_hash: Vec<u8>,
}

impl Caller {
    /// The SHA-256 of the API key the caller sent.
    pub fn key_hash(&self) -> &[u8] {
        &self.key_hash
    }

    /// The user the API key belongs to, or `ServiceError::Unauthorized`.
    pub fn authenticate(&self, conn: &mut PgConnection) -> Result<User, ServiceError> {
        users::find_by_api_key_hash(conn, &self.key_hash)?.ok_or(ServiceError::Unauthorized)
    }
}

/// What the extractor needs: the pool for its lookups, the keys it verified
/// lately, and the per-key limiter.
pub struct Gatekeeper {
    pool: DbPool,
    known: Mutex<HashMap<Vec<u8>, Instant>>,
    per_key: RateLimiter<Vec<u8>>,
}

impl Gatekeeper {
    pub fn new(pool: DbPool, per_key: RateLimiter<Vec<u8>>) -> Gatekeeper {
        Gatekeeper {
            pool,
            known: Mutex::new(HashMap::new()),
            per_key,
        }
    }

    fn known_lately(&self, key_hash: &[u8]) -> bool {
        let known = self
            .known
            .lock()
            .expect("the known keys' lock is never poisoned");
        known
            .get(key_hash)
            .is_some_and(|verified| verified.elapsed() < KNOWN_FOR)
    }

    fn remember(&self, key_hash: Vec<u8>) {
        let mut known = self
            .known
            .lock()
            .expect("the known keys' lock is never poisoned");
        if known.len() >= KNOWN_CAPACITY {
            known.retain(|_, verified| verified.elapsed() < KNOWN_FOR);
        }
        if known.len() < KNOWN_CAPACITY {
            known.insert(key_hash, Instant::now());
        }
    }

    fn within_limit(&self, key_hash: &Vec<u8>) -> Result<(), Problem> {
        self.per_key.check(key_hash).map_err(|wait| {
            Problem::new(
                ProblemKind::RateLimited,
                "too many requests for this API key; slow down",
            )
            .with_retry_after(wait)
        })
    }
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
    type Future = LocalBoxFuture<'static, Result<Self, Problem>>;

    fn from_request(request: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let gatekeeper = request
            .app_data::<web::Data<Gatekeeper>>()
            .expect("the Gatekeeper is registered at start-up")
            .clone();
        // Hashed once: the memory's key, the limiter's and the lookup's.
        let key_hash = bearer_token(request).map(users::hash_api_key);
        let known = key_hash
            .as_ref()
            .is_some_and(|hash| gatekeeper.known_lately(hash));
        let address_check = (!known).then(|| rate_limit::check_address(request));
        Box::pin(async move {
            if let Some(check) = address_check {
                check?;
            }
            let key_hash =
                key_hash.ok_or_else(|| Problem::unauthorized("a bearer API key is required"))?;
            if !known {
                verify(&gatekeeper, key_hash.clone()).await?;
            }
            gatekeeper.within_limit(&key_hash)?;
            Ok(Caller { key_hash })
        })
    }
}

/// Looks the key up on a blocking thread and remembers it when it is valid.
async fn verify(gatekeeper: &web::Data<Gatekeeper>, key_hash: Vec<u8>) -> Result<(), Problem> {
    let gate = gatekeeper.clone();
    let found = crate::http::request_id::block(move || -> Result<bool, ServiceError> {
        let mut conn = gate.pool.get()?;
        let found = users::find_by_api_key_hash(&mut conn, &key_hash)?.is_some();
        if found {
            gate.remember(key_hash);
        }
        Ok(found)
    })
    .await??;
    if found {
        Ok(())
    } else {
        Err(Problem::unauthorized("the API key is not valid"))
    }
}
