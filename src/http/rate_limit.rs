//! Rate limiting (GCRA, from the `governor` crate), keyed two ways:
//! - per API key, once the key is known to be valid;
//! - per client address, for everything a stranger can send without a valid
//!   key: failed authentications and the unauthenticated routes.
//!
//! Neither can be grown by a stranger: API keys enter only once verified, and
//! addresses are few (an IPv6 client counts as its /64, which it can fill).
//! An IPv4 client counts as its own address whatever the listener's family:
//! on a dual-stack socket it arrives as `::ffff:a.b.c.d`, whose /64 every
//! IPv4 client shares.

use std::hash::Hash;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpRequest};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use crate::wire::problem::{Problem, ProblemKind};

pub struct RateLimiter<K: Hash + Eq + Clone> {
    limiter: Option<DefaultKeyedRateLimiter<K>>,
    checks: AtomicU64,
}

/// How often the limiter forgets keys that have been quiet long enough to be
/// full again, so its map stays as small as the set of recent callers.
const FORGET_EVERY: u64 = 10_000;

impl<K: Hash + Eq + Clone> RateLimiter<K> {
    /// `per_second` of 0 switches limiting off.
    pub fn new(per_second: u32, burst: u32) -> RateLimiter<K> {
        let limiter = NonZeroU32::new(per_second).map(|rate| {
            let burst = NonZeroU32::new(burst.max(per_second)).unwrap_or(rate);
            DefaultKeyedRateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        RateLimiter {
            limiter,
            checks: AtomicU64::new(0),
        }
    }

    /// Ok, or how long the caller must wait.
    pub fn check(&self, key: &K) -> Result<(), Duration> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        if self.checks.fetch_add(1, Ordering::Relaxed) % FORGET_EVERY == FORGET_EVERY - 1 {
            limiter.retain_recent();
        }
        limiter
            .check_key(key)
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }
}

/// The limiter of strangers, keyed by [`client_address`].
pub type AddressLimiter = RateLimiter<IpAddr>;

/// The peer's address as the socket says (forwarding headers are anyone's to
/// write, so they are not trusted); an IPv4-mapped address as the IPv4
/// address it maps, another IPv6 address as its /64.
pub fn client_address(request: &HttpRequest) -> IpAddr {
    match request.peer_addr().map(|peer| peer.ip().to_canonical()) {
        Some(IpAddr::V6(v6)) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(prefix.into())
        }
        Some(v4) => v4,
        None => IpAddr::from([0, 0, 0, 0]),
    }
}

/// Spends one of the client address's allowance, or the 429 to answer.
pub fn check_address(request: &HttpRequest) -> Result<(), Problem> {
    let limiter = request
        .app_data::<web::Data<AddressLimiter>>()
        .expect("the AddressLimiter is registered at start-up");
    limiter.check(&client_address(request)).map_err(|wait| {
        Problem::new(
            ProblemKind::RateLimited,
            "too many requests from this address; slow down",
        )
        .with_retry_after(wait)
    })
}

/// Middleware for the routes anyone may call: limited per client address
/// before the handler runs, so a flood reaches neither the database nor the
/// gateway.
pub async fn per_address(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    if let Err(problem) = check_address(request.request()) {
        return Ok(request.error_response(problem));
    }
    Ok(next.call(request).await?.map_into_boxed_body())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_over_its_burst_waits_and_others_do_not() {
        let limiter = RateLimiter::new(1, 3);
        for _ in 0..3 {
            assert!(limiter.check(&"flood").is_ok());
        }
        let wait = limiter.check(&"flood").unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(1));
        assert!(limiter.check(&"calm").is_ok());
    }

    #[test]
    fn zero_switches_it_off() {
        let limiter = RateLimiter::new(0, 0);
        assert!((0..1000).all(|_| limiter.check(&"any").is_ok()));
    }

    /// A request from `address`, as the socket gives its peer.
    fn request(address: &str) -> HttpRequest {
        actix_web::test::TestRequest::default()
            .peer_addr(address.parse().unwrap())
            .to_http_request()
    }

    #[test]
    fn an_ipv6_client_counts_as_its_64() {
        assert_eq!(
            client_address(&request("[2001:db8:1:2:aaaa::1]:5000")),
            client_address(&request("[2001:db8:1:2:bbbb::9]:6000"))
        );
        assert_ne!(
            client_address(&request("[2001:db8:1:2::1]:5000")),
            client_address(&request("[2001:db8:1:3::1]:5000"))
        );
        assert_eq!(
            client_address(&request("192.0.2.7:80")),
            IpAddr::from([192, 0, 2, 7])
        );
    }

    #[test]
    fn an_ipv4_client_on_a_dual_stack_listener_counts_as_its_own_address() {
        assert_eq!(
            client_address(&request("[::ffff:192.0.2.7]:5000")),
            IpAddr::from([192, 0, 2, 7])
        );
        assert_ne!(
            client_address(&request("[::ffff:192.0.2.7]:5000")),
            client_address(&request("[::ffff:192.0.2.8]:5000"))
        );
    }
}
