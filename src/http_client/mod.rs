//! Outbound HTTP (Stripe, webhooks, the fake gateway's events): one way to
//! configure a client, so every one of them follows no redirect; plain HTTP
//! only to this machine for the URLs operators set (`check_url`); and where
//! users' webhooks may go (`destination`).

pub mod destination;

use std::net::IpAddr;
use std::time::Duration;

/// A client's configuration: it never follows a redirect (a 3xx is an
/// answer like any other: followed, it turns a POST into a GET elsewhere
/// whose 200 would be taken for the POST's) and reads error statuses as
/// answers.
pub fn config(connect_timeout: Duration, timeout: Duration) -> ureq::config::Config {
    builder(connect_timeout, timeout).build()
}

/// That configuration, to add to: users' webhooks take no proxy from the
/// environment (`HTTPS_PROXY`, `ALL_PROXY`), which would be checked in
/// place of the destination.
pub fn builder(
    connect_timeout: Duration,
    timeout: Duration,
) -> ureq::config::ConfigBuilder<ureq::typestate::AgentScope> {
    ureq::Agent::config_builder()
        .timeout_connect(Some(connect_timeout))
        .timeout_global(Some(timeout))
        .max_redirects(0)
        .http_status_as_error(false)
        .user_agent(concat!("ridepay/", env!("CARGO_PKG_VERSION")))
}

/// A client of that configuration.
pub fn agent(connect_timeout: Duration, timeout: Duration) -> ureq::Agent {
    config(connect_timeout, timeout).into()
}

/// `https://`, or `http://` to a loopback host (a local test double): secrets
/// and payment data never cross a network in the clear.
pub fn check_url(raw: &str) -> Result<(), String> {
    let url = url::Url::parse(raw).map_err(|_| "is not a valid URL".to_owned())?;
    if url.host().is_none() {
        return Err("has no host".to_owned());
    }
    match url.scheme() {
        "https" => Ok(()),
        "http" if names_loopback(&url) => Ok(()),
        "http" => Err("must be https:// (plain http:// only to a loopback host)".to_owned()),
        other => Err(format!("must be an https:// URL, not {other}://...")),
    }
}

/// Whether the URL's host is this machine by its name alone (`localhost`
/// or a loopback address), known without a lookup.
pub fn names_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_and_http_only_to_loopback() {
        for good in [
            "https://api.stripe.com",
            "http://127.0.0.1:12111",
            "http://127.8.9.10/x",
            "http://localhost:8080/receipts",
            "http://[::1]:9000",
        ] {
            assert_eq!(check_url(good), Ok(()), "{good}");
        }
        for bad in [
            "http://api.stripe.com",
            "http://10.0.0.5/receipts",
            "http://localhost.example.com",
            "ftp://127.0.0.1",
            "not a url",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}
