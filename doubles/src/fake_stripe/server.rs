//! The listener: a thread per connection (a bounded number of them), one
//! request each, routed to the PaymentIntents, Refunds, Balance
//! Transactions, Connect and Transfers APIs.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::config::{FakeGatewayConfig, WebhookTarget};
use super::http::{read_request, write_response, Request, Response};
use super::state::{InFlight, Reply, State};
use super::wire::{invalid_request, rate_limited};
use super::{
    accounts, authentication_page, balance_transactions, intents, onboarding_page, refunds,
    transfers, webhooks,
};
use crate::events::Double;
use crate::intents::IntentSettings;
use crate::records::{records_pool, run_migrations};

/// A running fake gateway, serving on a background thread.
pub struct FakeGateway {
    address: SocketAddr,
    state: Weak<State>,
}

impl FakeGateway {
    /// Migrates its records database, binds `config.bind` (port 0 picks a
    /// free port) and serves until the process ends.
    pub fn start(config: FakeGatewayConfig) -> anyhow::Result<FakeGateway> {
        let pool = records_pool(&config.database_url);
        run_migrations(
            &mut *pool
                .get()
                .context("cannot connect to the records database")?,
        )
        .map_err(anyhow::Error::msg)?;
        let listener = TcpListener::bind(&config.bind)
            .with_context(|| format!("cannot bind {}", config.bind))?;
        let address = listener.local_addr()?;
        let state = Arc::new(State {
            intents: IntentSettings {
                double: Double::Fake,
                authentication_page: format!("http://{address}{}", authentication_page::PATH),
                authorization_ttl: config.faults.authorization_ttl,
                extended_authorization_ttl: config.faults.extended_authorization_ttl,
            },
            onboarding_page: format!("http://{address}{}", onboarding_page::PATH),
            webhook: Mutex::new(config.webhook.clone()),
            config,
            pool,
            in_flight: InFlight::default(),
        });
        // It serves for the rest of the process, as a server would.
        thread::Builder::new()
            .name("fake-gateway".to_owned())
            .spawn({
                let state = Arc::clone(&state);
                move || accept(&listener, &state)
            })?;
        webhooks::start(Arc::downgrade(&state))?;
        Ok(FakeGateway {
            address,
            state: Arc::downgrade(&state),
        })
    }

    /// Sends its signed events there from now on.
    pub fn send_webhooks_to(&self, target: WebhookTarget) {
        if let Some(state) = self.state.upgrade() {
            *state.webhook.lock().expect("webhook target") = Some(target);
        }
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The base URL to give a Stripe client (`STRIPE_API_BASE`).
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

fn accept(listener: &TcpListener, state: &Arc<State>) {
    let limits = state.config.limits;
    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(stream) => stream,
            Err(err) => {
                // Out of file descriptors, say: wait rather than spin.
                log::warn!("fake gateway cannot accept: {err}");
                thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let Some(slot) = Slot::take(&open, limits.max_connections) else {
            refuse(&stream);
            continue;
        };
        let state = Arc::clone(state);
        let spawned = thread::Builder::new()
            .name("fake-gateway-conn".to_owned())
            .spawn(move || {
                let _slot = slot;
                let deadline = Instant::now() + limits.request_timeout;
                if let Err(err) = serve(&stream, &state, deadline) {
                    log::debug!("fake gateway connection: {err}");
                }
            });
        if let Err(err) = spawned {
            log::warn!("fake gateway cannot start a connection thread: {err}");
        }
    }
}

/// One of the connections served at once, given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(open: &Arc<AtomicUsize>, max: usize) -> Option<Slot> {
        open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then_some(n + 1)
        })
        .ok()
        .map(|_| Slot(Arc::clone(open)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A connection over the limit: Stripe's retryable 429 without reading its
/// request, written without waiting on a client that does not read.
fn refuse(stream: &TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
    let _ = write_response(stream, &rate_limited());
}

fn serve(stream: &TcpStream, state: &State, deadline: Instant) -> std::io::Result<()> {
    let Some(request) = read_request(stream, deadline)? else {
        return Ok(());
    };
    match route(state, &request) {
        Reply::Answer(response) => write_response(stream, &response),
        // Dropping the stream closes it with nothing written.
        Reply::HangUp => Ok(()),
    }
}

fn route(state: &State, request: &Request) -> Reply {
    // The rider's browser carries no API key.
    if request.path == authentication_page::PATH {
        return Reply::Answer(authentication_page::serve(state, request));
    }
    if request.path == onboarding_page::PATH {
        return Reply::Answer(onboarding_page::serve(state, request));
    }
    if let Some(refusal) = authenticate(state, request) {
        return Reply::Answer(refusal);
    }
    if (request.method.as_str(), request.path.as_str()) == ("GET", "/v1/payment_intents/search") {
        return Reply::Answer(intents::search(state, request));
    }
    if let Some(rest) = request.path.strip_prefix("/v1/payment_intents/") {
        return match (request.method.as_str(), rest.split_once('/')) {
            ("POST", Some((id, action))) => intents::act(state, request, id, action),
            ("GET", None) => Reply::Answer(intents::retrieve(state, rest, &request.query)),
            (method, _) => Reply::Answer(invalid_request(
                404,
                "resource_missing",
                format!("Unrecognized request URL ({method}: {}).", request.path),
            )),
        };
    }
    if let Some(id) = request
        .path
        .strip_prefix("/v1/transfers/")
        .and_then(|rest| rest.strip_suffix("/reversals"))
    {
        match request.method.as_str() {
            _ if id.contains('/') => {}
            "POST" => return transfers::reverse(state, request, id),
            "GET" => return Reply::Answer(transfers::list_reversals(state, request, id)),
            _ => {}
        }
    }
    if let Some(id) = request.path.strip_prefix("/v1/accounts/") {
        if request.method == "GET" && !id.contains('/') {
            return Reply::Answer(accounts::retrieve(state, id));
        }
    }
    match (request.method.as_str(), request.path.as_str()) {
        ("POST", "/v1/accounts") => accounts::create(state, request),
        ("GET", "/v1/accounts") => Reply::Answer(accounts::list(state, request)),
        ("POST", "/v1/account_links") => accounts::create_link(state, request),
        ("POST", "/v1/payment_intents") => intents::create(state, request),
        ("GET", "/v1/payment_intents") => Reply::Answer(intents::list(state, request)),
        ("POST", "/v1/refunds") => refunds::create(state, request),
        ("GET", "/v1/refunds") => Reply::Answer(refunds::list(state, request)),
        ("GET", "/v1/balance_transactions") => {
            Reply::Answer(balance_transactions::list(state, request))
        }
        ("POST", "/v1/transfers") => transfers::create(state, request),
        ("GET", "/v1/transfers") => Reply::Answer(transfers::list(state, request)),
        ("GET", "/v1/balance") => Reply::Answer(transfers::balance(state, request)),
        (method, path) => Reply::Answer(invalid_request(
            404,
            "resource_missing",
            format!("Unrecognized request URL ({method}: {path})."),
        )),
    }
}

/// Stripe answers a missing or wrong key with 401 before anything else.
fn authenticate(state: &State, request: &Request) -> Option<Response> {
    let given = request
        .header("authorization")
        .and_then(|value| value.strip_prefix("Bearer "))
        .filter(|key| !key.is_empty());
    let accepted = match (given, &state.config.api_key) {
        (None, _) => false,
        (Some(given), Some(expected)) => given == expected,
        (Some(_), None) => true,
    };
    // Never echo the key, as Stripe masks it.
    (!accepted).then(|| invalid_request(401, "api_key_invalid", "Invalid API Key provided."))
}
