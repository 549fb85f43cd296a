//! What every request meets before an endpoint: authentication, routing,
//! rate limits, limits on what one request may take; and where ridepay's
//! own requests may go.

mod authentication;
mod outbound;
mod platform_keys;
mod rate_limits;
mod request_limits;
mod routing;
