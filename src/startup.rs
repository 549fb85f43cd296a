//! Building and running the HTTP application.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::middleware::{from_fn, Condition};
use actix_web::{web, App, HttpServer};
use anyhow::Context;
use diesel::Connection;

use crate::config::{self, GatewayKind, Settings};
use crate::context::ServiceContext;
use crate::db::{self, DbPool};
use crate::http::auth::Gatekeeper;
#[cfg(feature = "simulated")]
use crate::http::authentication_page::{self, AuthenticationPage};
use crate::http::body::BodyTimeout;
use crate::http::rate_limit::{AddressLimiter, RateLimiter};
use crate::http::webhooks::WebhookSettings;
use crate::http::{
    access_log, health, metrics, openapi, payment_return, rate_limit, request_id, routes, routing,
    webhooks,
};
use crate::idempotency::KeyPolicy;
use crate::payments::{self, PaymentGateway, StripeGateway};
use crate::workers::Workers;
#[cfg(feature = "simulated")]
use ridepay_doubles::{events::Double, intents::IntentSettings, SimulatedGateway};

pub struct Application {
    address: SocketAddr,
    server: Server,
    pool: DbPool,
    workers: Workers,
}

impl Application {
    /// Connects to `database_url`, applies pending migrations and binds
    /// `settings.bind_addr` (port 0 picks a free port).
    pub fn build(settings: &Settings, database_url: &str) -> anyhow::Result<Application> {
        // One plain connection first: an unreachable database is one clear
        // error at once, not a pool retrying for its whole timeout.
        let installation_id = {
            let mut conn = diesel::PgConnection::establish(database_url).with_context(|| {
                format!(
                    "cannot connect to the database at {}",
                    config::mask_url(database_url)
                )
            })?;
            db::run_migrations(&mut conn)?;
            payments::installation_id(&mut conn)?
        };
        let listener = TcpListener::bind(&settings.bind_addr)
            .with_context(|| format!("cannot bind {}", settings.bind_addr))?;
        let address = listener.local_addr()?;
        // Where riders' browsers reach this server.
        let public_base = settings
            .public_base_url
            .clone()
            .unwrap_or_else(|| format!("http://{address}"));
        let public_base = public_base.trim_end_matches('/');
        let pool = db::build_pool(database_url, settings);
        // The simulated gateway's authentication page is served here.
        #[cfg(feature = "simulated")]
        let authentication_page = (settings.gateway == GatewayKind::Simulated).then(|| {
            web::Data::new(AuthenticationPage {
                pool: pool.clone(),
                settings: IntentSettings {
                    double: Double::Simulated,
                    authentication_page: format!("{public_base}{}", authentication_page::PATH),
                    authorization_ttl: settings.simulated_gateway.authorization_ttl,
                },
            })
        });
        let gateway: Arc<dyn PaymentGateway> = match settings.gateway {
            #[cfg(feature = "simulated")]
            GatewayKind::Simulated => Arc::new(
                SimulatedGateway::new(pool.clone(), settings.simulated_gateway.clone())
                    .with_authentication_page(format!("{public_base}{}", authentication_page::PATH))
                    .with_in_flight_hook(|| crate::crash::point(crate::crash::GATEWAY_IN_FLIGHT)),
            ),
            GatewayKind::Stripe => Arc::new(StripeGateway::new(&settings.stripe)?),
        };
        let context = Arc::new(ServiceContext {
            pool: pool.clone(),
            gateway,
            key_policy: KeyPolicy {
                lease_timeout: settings.lease_timeout,
                effect_deadline: settings.completer.charge_deadline,
            },
            installation_id,
            return_url: format!("{public_base}{}", payment_return::PATH),
        });
        let limits = &settings.rate_limit;
        let gatekeeper = web::Data::new(Gatekeeper::new(
            pool.clone(),
            RateLimiter::new(limits.per_second, limits.burst),
        ));
        let address_limiter = web::Data::new(AddressLimiter::new(
            limits.address_per_second,
            limits.address_burst,
        ));
        let body_timeout = BodyTimeout(settings.http.body_timeout);
        let workers = Workers::start(settings, context.clone())?;
        let context = web::Data::from(context);
        let webhook_settings = web::Data::new(WebhookSettings {
            secret: settings.stripe.webhook_secret.clone(),
        });
        // The logger renders its line's fields for every request, even when the
        // line is then filtered out: left out when no access line is wanted.
        let access_log =
            log::log_enabled!(target: "actix_web::middleware::logger", log::Level::Info);
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
            let app = match &authentication_page {
                Some(page) => app
                    .app_data(page.clone())
                    .configure(authentication_page::routes),
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
                routing::get_only("/metrics", metrics::serve)
                    .wrap(from_fn(rate_limit::per_address)),
            )
            .service(routing::get_only(
                "/api/openapi.json",
                openapi::openapi_json,
            ))
            .service(
                web::resource("/webhooks/stripe")
                    .route(web::post().to(webhooks::stripe_webhook))
                    .default_service(routing::method_not_allowed("POST"))
                    .wrap(from_fn(rate_limit::per_address)),
            )
            .service(
                routes::endpoints()
                    .iter()
                    .fold(web::scope("/api"), |scope, endpoint| {
                        scope.configure(endpoint.routes)
                    }),
            )
            .default_service(web::to(routing::not_found))
        })
        .listen(listener)?
        // Signals are the application's to handle: actix would stop at once
        // on SIGINT, dropping requests in flight (`run_until_signalled`).
        .disable_signals();
        // Slow clients: a request's head must arrive within the client timeout
        // (else 408), and idle keep-alive connections are closed.
        server = server
            .client_request_timeout(settings.http.client_request_timeout)
            .client_disconnect_timeout(Duration::from_secs(1))
            .keep_alive(settings.http.keep_alive)
            .max_connections(settings.http.max_connections)
            .shutdown_timeout(30);
        if settings.http_workers > 0 {
            server = server.workers(settings.http_workers);
        }
        Ok(Application {
            address,
            server: server.run(),
            pool,
            workers,
        })
    }

    /// The address actually bound.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    pub fn pool(&self) -> &DbPool {
        &self.pool
    }

    /// Serves until SIGINT or SIGTERM, both graceful: the server stops
    /// accepting, the requests in flight finish, then the workers stop.
    pub async fn run_until_signalled(self) -> std::io::Result<()> {
        use actix_web::rt::signal::unix::{signal, SignalKind};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        let handle = self.server.handle();
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
        self.run_until_stopped().await
    }

    /// Serves until the server is stopped (tests and tools run it so, and
    /// leave the process's signals alone), then stops the workers.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = self.server.await;
        let workers = self.workers;
        // Joining threads blocks; keep it off the async runtime.
        let _ = actix_web::rt::task::spawn_blocking(move || workers.stop()).await;
        result
    }
}
