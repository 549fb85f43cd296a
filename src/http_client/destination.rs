//! Where a webhook may go: `https://` to a public address; with
//! `OUTBOUND_WEBHOOK_ALLOW_LOOPBACK`, loopback addresses too, over `http://`
//! or `https://`. API users must never reach internal services (whose admin
//! APIs, Patroni's among them, take unauthenticated POSTs), so the check is
//! made on the addresses the host resolves to, at registration and on every
//! attempt, where the connection goes only to an address that passes it
//! (`GuardedResolver`): a name that resolves elsewhere later gets nowhere.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// Who may be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DestinationPolicy {
    pub allow_loopback: bool,
}

impl DestinationPolicy {
    /// Whether the address may be connected to, for a URL of `scheme`.
    pub fn allows(self, scheme: &str, ip: IpAddr) -> bool {
        let loopback = self.allow_loopback && ip.to_canonical().is_loopback();
        match scheme {
            "https" => loopback || is_public(ip),
            "http" => loopback,
            _ => false,
        }
    }

    /// The URL's form: absolute, `https://` (or `http://` to a host named
    /// as loopback, where loopback is allowed: refused for its scheme before
    /// any lookup), with a host and no credentials in it.
    pub fn check_url(self, raw: &str) -> Result<url::Url, String> {
        let url = url::Url::parse(raw).map_err(|_| "is not an absolute URL".to_owned())?;
        if url.host().is_none() {
            return Err("has no host".to_owned());
        }
        match url.scheme() {
            "https" => {}
            "http" if self.allow_loopback && super::names_loopback(&url) => {}
            "http" if self.allow_loopback => {
                return Err("must be https:// (plain http:// only to a loopback host)".to_owned())
            }
            "http" => return Err("must be https://".to_owned()),
            other => return Err(format!("must be https://, not {other}://")),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not carry credentials".to_owned());
        }
        if url.fragment().is_some() {
            return Err("must not have a fragment".to_owned());
        }
        Ok(url)
    }

    /// Resolves the URL's host, waiting at most `LOOKUP_TIMEOUT`, and
    /// checks every address it names: the check at registration. A refusal
    /// reads the same for every host, resolvable or not, so the server's
    /// resolver answers no user's question about internal names; what it
    /// found goes to the debug log.
    pub fn check_destination(self, url: &url::Url) -> Result<(), String> {
        let Some(why) = self.refusal(url) else {
            return Ok(());
        };
        log::debug!(
            "webhook destination on {} refused: {why}",
            url.host_str().unwrap_or_default()
        );
        Err(match self.allow_loopback {
            true => format!("{NOT_REACHABLE} (or loopback ones)"),
            false => NOT_REACHABLE.to_owned(),
        })
    }

    /// Why the URL's host may not be reached, if it may not.
    fn refusal(self, url: &url::Url) -> Option<String> {
        let host = url.host_str()?;
        let port = url.port_or_known_default()?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let addresses = match lookup(format!("{host}:{port}")) {
            Ok(addresses) if addresses.is_empty() => return Some("no address".to_owned()),
            Ok(addresses) => addresses,
            Err(err) => return Some(err),
        };
        addresses
            .iter()
            .find(|address| !self.allows(url.scheme(), address.ip()))
            .map(|refused| format!("resolves to {}", refused.ip()))
    }
}

/// What a user is told of a destination that may not be reached.
pub const NOT_REACHABLE: &str =
    "names a host that may not be reached: webhooks go only to public addresses";

/// How long a registration or a change waits for the resolver.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// The addresses `host:port` resolves to, or why none came within
/// `LOOKUP_TIMEOUT`.
fn lookup(host_and_port: String) -> Result<Vec<SocketAddr>, String> {
    within(LOOKUP_TIMEOUT, move || {
        host_and_port
            .to_socket_addrs()
            .map(|addresses| addresses.collect())
    })
}

/// What `resolve` answers, if it answers within `limit`. The system's
/// resolver takes no time bound from its caller, so it runs on a thread of
/// its own, left to finish alone when the wait is over.
fn within(
    limit: Duration,
    resolve: impl FnOnce() -> std::io::Result<Vec<SocketAddr>> + Send + 'static,
) -> Result<Vec<SocketAddr>, String> {
    let (sender, answer) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("webhook-lookup".to_owned())
        .spawn(move || {
            let _ = sender.send(resolve());
        })
        .map_err(|err| format!("no thread to resolve on: {err}"))?;
    match answer.recv_timeout(limit) {
        Ok(resolved) => resolved.map_err(|err| format!("does not resolve ({err})")),
        Err(_) => Err(format!("no answer from the resolver within {limit:?}")),
    }
}

/// Whether an address is public: unicast and routed on the internet, not
/// private, shared, loopback, link-local, documentation, benchmarking or
/// reserved (Rust's `is_global` is not stable yet).
pub fn is_public(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(ip) => is_public_v4(ip),
        IpAddr::V6(ip) => is_public_v6(ip),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        // Shared address space (carrier-grade NAT), 100.64.0.0/10.
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments, 192.0.0.0/24.
        || (a == 192 && b == 0 && c == 0)
        // Benchmarking, 198.18.0.0/15.
        || (a == 198 && (18..20).contains(&b))
        // Reserved, 240.0.0.0/4.
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // Unique local, fc00::/7.
        || (first & 0xfe00) == 0xfc00
        // Link-local, fe80::/10.
        || (first & 0xffc0) == 0xfe80
        // Documentation, 2001:db8::/32.
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
        // NAT64, 64:ff9b::/96, which reaches IPv4 addresses unchecked.
        || (first == 0x0064 && ip.segments()[1] == 0xff9b))
}

/// Resolves as usual, then keeps only the addresses the policy allows for
/// the URL's scheme: the connection is made to one of those or to none.
#[derive(Debug)]
pub struct GuardedResolver {
    pub policy: DestinationPolicy,
    pub inner: DefaultResolver,
}

/// The error of an attempt whose host resolves to no address the sender may
/// reach. It reads as a host that does not resolve, as its user is told at
/// registration; the sender tells it apart to log it for the operator.
#[derive(Debug)]
pub struct NotAllowed;

impl std::fmt::Display for NotAllowed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("host not found")
    }
}

impl std::error::Error for NotAllowed {}

impl NotAllowed {
    /// Whether an attempt failed because its host may not be reached.
    pub fn caused(err: &ureq::Error) -> bool {
        matches!(err, ureq::Error::Other(inner) if inner.is::<NotAllowed>())
    }
}

impl Resolver for GuardedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let scheme = uri.scheme_str().unwrap_or_default();
        let resolved = self.inner.resolve(uri, config, timeout)?;
        let mut allowed = self.empty();
        for address in resolved
            .iter()
            .filter(|address| self.policy.allows(scheme, address.ip()))
        {
            allowed.push(*address);
        }
        if allowed.is_empty() {
            return Err(ureq::Error::Other(Box::new(NotAllowed)));
        }
        Ok(allowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: DestinationPolicy = DestinationPolicy {
        allow_loopback: false,
    };
    const LOCAL: DestinationPolicy = DestinationPolicy {
        allow_loopback: true,
    };

    #[test]
    fn only_public_addresses_and_loopback_where_allowed() {
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        for public in ["93.184.216.34", "2606:2800:220:1::1", "1.1.1.1"] {
            assert!(STRICT.allows("https", ip(public)), "{public}");
            assert!(!STRICT.allows("http", ip(public)), "{public}");
        }
        for internal in [
            "10.0.0.5",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "127.0.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "::ffff:127.0.0.1",
            "64:ff9b::a00:1",
            "198.18.0.1",
            "240.0.0.1",
        ] {
            assert!(!STRICT.allows("https", ip(internal)), "{internal}");
        }
        for loopback in ["127.0.0.1", "::1", "::ffff:127.0.0.1"] {
            assert!(LOCAL.allows("http", ip(loopback)), "{loopback}");
            assert!(LOCAL.allows("https", ip(loopback)), "{loopback}");
        }
        assert!(!LOCAL.allows("http", ip("93.184.216.34")));
        assert!(!LOCAL.allows("https", ip("10.0.0.5")));
    }

    #[test]
    fn a_url_is_https_with_a_host_and_no_credentials() {
        assert!(STRICT
            .check_url("https://hooks.example.com/ridepay")
            .is_ok());
        assert!(LOCAL.check_url("http://127.0.0.1:9000/hook").is_ok());
        assert!(LOCAL.check_url("http://localhost:9000/hook").is_ok());
        // Refused for its scheme, with no lookup of the name.
        for bad in [
            "http://hooks.example.com/",
            "http://10.1.2.3/",
            "http://a.invalid/",
        ] {
            assert!(
                LOCAL.check_url(bad).unwrap_err().contains("https://"),
                "{bad}"
            );
        }
        for bad in [
            "http://hooks.example.com/",
            "ftp://hooks.example.com/",
            "https://user:pw@hooks.example.com/",
            "https://hooks.example.com/#x",
            "/relative",
        ] {
            assert!(STRICT.check_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_destination_is_checked_on_every_address_it_resolves_to() {
        let check = |policy: DestinationPolicy, raw: &str| {
            policy.check_destination(&policy.check_url(raw).unwrap())
        };
        assert!(check(LOCAL, "http://127.0.0.1:9/").is_ok());
        assert!(check(LOCAL, "http://localhost:9/").is_ok());
        assert!(check(STRICT, "https://127.0.0.1/").is_err());
        assert!(check(STRICT, "https://localhost/").is_err());
        assert!(check(LOCAL, "https://10.1.2.3/").is_err());
        assert!(check(LOCAL, "https://[fd00::1]/").is_err());
    }

    #[test]
    fn a_resolver_that_does_not_answer_is_waited_for_only_so_long() {
        let started = std::time::Instant::now();
        let slow = within(Duration::from_millis(50), || {
            std::thread::sleep(Duration::from_secs(30));
            Ok(Vec::new())
        });
        assert!(slow.unwrap_err().contains("no answer"));
        assert!(started.elapsed() < Duration::from_secs(30));
        let prompt = within(Duration::from_secs(30), || {
            Ok(vec!["127.0.0.1:9".parse().unwrap()])
        });
        assert_eq!(prompt.unwrap().len(), 1);
    }

    #[test]
    fn a_refusal_reads_the_same_whatever_the_host_resolves_to() {
        let refusal = |raw: &str| {
            STRICT
                .check_destination(&STRICT.check_url(raw).unwrap())
                .unwrap_err()
        };
        let private = refusal("https://10.1.2.3/");
        assert_eq!(private, NOT_REACHABLE);
        for other in [
            "https://127.0.0.1/",
            "https://localhost/",
            "https://[fd00::1]/",
            "https://no-such-host.invalid/",
        ] {
            assert_eq!(refusal(other), private, "{other}");
        }
    }
}
