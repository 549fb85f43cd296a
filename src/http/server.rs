//! The HTTP server: every route with its middleware and shared state, the
//! limits on slow clients, and a graceful stop.

use std::future::Future;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::middleware::{from_fn, Condition};
use actix_web::{web, App, HttpServer};

use super::auth::Gatekeeper;
#[cfg(feature = "simulated")]
use super::authentication_page::{self, SimulatedGatewayPages};
use super::body::BodyTimeout;
use super::gateway_events::WebhookSettings;
#[cfg(feature = "simulated")]
use super::onboarding_page;
use super::rate_limit::{AddressLimiter, RateLimiter};
use super::{
    access_log, driver_pages, gateway_events, health, ledger, metrics, openapi, payment_return,
    rate_limit, request_id, routes, routing,
};
use crate::config::Settings;
use crate::context::ServiceContext;

/// What the simulated gateway's pages (authentication, onboarding) work on,
/// when they are served.
#[cfg(feature = "simulated")]
pub type SimulatedPages = Option<SimulatedGatewayPages>;
#[cfg(not(feature = "simulated"))]
pub type SimulatedPages = Option<std::convert::Infallible>;

/// The server, accepting on its listener.
pub struct Server(actix_web::dev::Server);

/// Starts serving on `listener`. Signals are left to the caller
/// ([`Server::stop_on_signals`]).
pub fn start(
    settings: &Settings,
    listener: TcpListener,
    context: Arc<ServiceContext>,
    simulated_pages: SimulatedPages,
) -> std::io::Result<Server> {
    let limits = &settings.server.rate_limit;
    let gatekeeper = web::Data::new(Gatekeeper::new(
        context.pool.clone(),
        RateLimiter::new(limits.per_second, limits.burst),
    ));
    let address_limiter = web::Data::new(AddressLimiter::new(
        limits.address_per_second,
        limits.address_burst,
    ));
    let body_timeout = BodyTimeout(settings.server.limits.body_timeout);
    let context = web::Data::from(context);
    let webhook_settings = web::Data::new(WebhookSettings {
        secret: settings.gateway.stripe.webhook_secret.clone(),
        connect_secret: settings.gateway.stripe.connect_webhook_secret.clone(),
    });
    #[cfg(feature = "simulated")]
    let simulated_pages = simulated_pages.map(web::Data::new);
    #[cfg(not(feature = "simulated"))]
    let _ = simulated_pages;
    // The logger renders its line's fields for every request, even when the
    // line is then filtered out: left out when no access line is wanted.
    let access_log = log::log_enabled!(target: "actix_web::middleware::logger", log::Level::Info);
    let mut server = HttpServer::new(move || {
        let app = App::new()
            .wrap(Condition::new(access_log, access_log::logger()))
            .wrap(from_fn(metrics::track_requests))
            .wrap(from_fn(request_id::middleware))
            .app_data(context.clone())
            .app_data(gatekeeper.clone())
            .app_data(address_limiter.clone())
            .app_data(body_timeout)
            .app_data(webhook_settings.clone())
            .app_data(routing::path_config())
            .app_data(routing::query_config())
            .service(routing::get_only("/healthz", health::healthz));
        #[cfg(feature = "simulated")]
        let app = match &simulated_pages {
            Some(pages) => app
                .app_data(pages.clone())
                .configure(authentication_page::routes)
                .configure(onboarding_page::routes),
            None => app,
        };
        app.service(
            routing::get_only(payment_return::PATH, payment_return::payment_return)
                .wrap(from_fn(rate_limit::per_address)),
        )
        .service(
            routing::get_only("/readyz", health::readyz).wrap(from_fn(rate_limit::per_address)),
        )
        .service(
            routing::get_only("/metrics", metrics::serve).wrap(from_fn(rate_limit::per_address)),
        )
        .service(routing::get_only(
            "/api/openapi.json",
            openapi::openapi_json,
        ))
        .service(
            web::resource("/webhooks/stripe")
                .route(web::post().to(gateway_events::stripe_webhook))
                .default_service(routing::method_not_allowed("POST"))
                .wrap(from_fn(rate_limit::per_address)),
        )
        .service(
            web::resource("/webhooks/stripe/connect")
                .route(web::post().to(gateway_events::connect_webhook))
                .default_service(routing::method_not_allowed("POST"))
                .wrap(from_fn(rate_limit::per_address)),
        )
        .configure(driver_pages::routes)
        .service(
            routes::endpoints()
                .iter()
                .fold(web::scope("/api"), |scope, endpoint| {
                    scope.configure(endpoint.routes)
                })
                .configure(ledger::routes),
        )
        .default_service(web::to(routing::not_found))
    })
    .listen(listener)?
    // Signals are the application's to handle: actix would stop at once on
    // SIGINT, dropping requests in flight (`Server::stop_on_signals`).
    .disable_signals();
    // Slow clients: a request's head must arrive within the client timeout
    // (else 408), and idle keep-alive connections are closed.
    server = server
        .client_request_timeout(settings.server.limits.client_request_timeout)
        .client_disconnect_timeout(Duration::from_secs(1))
        .keep_alive(settings.server.limits.keep_alive)
        .max_connections(settings.server.limits.max_connections)
        .shutdown_timeout(30);
    if settings.server.workers > 0 {
        server = server.workers(settings.server.workers);
    }
    Ok(Server(server.run()))
}

impl Server {
    /// Stops gracefully on SIGINT or SIGTERM: no longer accepting, the
    /// requests in flight finish.
    pub fn stop_on_signals(&self) -> std::io::Result<()> {
        use actix_web::rt::signal::unix::{signal, SignalKind};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        let handle = self.0.handle();
        actix_web::rt::spawn(async move {
            let which = futures_util::future::select(
                Box::pin(interrupt.recv()),
                Box::pin(terminate.recv()),
            )
            .await;
            let name = match which {
                futures_util::future::Either::Left(_) => "SIGINT",
                futures_util::future::Either::Right(_) => "SIGTERM",
            };
            log::info!("{name}: finishing the requests in flight, then stopping");
            handle.stop(true).await;
        });
        Ok(())
    }

    /// Serves until the server is stopped.
    pub async fn stopped(self) -> std::io::Result<()> {
        self.0.await
    }
}

/// Runs `future` on the runtime the server needs, on this thread.
pub fn block_on<F: Future>(future: F) -> F::Output {
    actix_web::rt::System::new().block_on(future)
}
