//! Building and running the HTTP application.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::middleware::Logger;
use actix_web::{web, App, HttpServer};
use anyhow::Context;

use crate::config::{GatewayKind, Settings};
use crate::context::ServiceContext;
use crate::db::{self, DbPool};
use crate::payments::{self, PaymentGateway, SimulatedGateway, StripeGateway};
use crate::{health, rides, routing};

pub struct Application {
    address: SocketAddr,
    server: Server,
    pool: DbPool,
}

impl Application {
    /// Connects to `database_url`, applies pending migrations and binds
    /// `settings.bind_addr` (port 0 picks a free port).
    pub fn build(settings: &Settings, database_url: &str) -> anyhow::Result<Application> {
        let pool = db::build_pool(database_url, settings);
        let installation_id = {
            let mut conn = pool.get().context("cannot connect to the database")?;
            db::run_migrations(&mut conn)?;
            payments::installation_id(&mut conn)?
        };
        let gateway: Arc<dyn PaymentGateway> = match settings.gateway {
            GatewayKind::Simulated => Arc::new(SimulatedGateway::new(
                pool.clone(),
                settings.simulated_gateway.clone(),
            )),
            GatewayKind::Stripe => Arc::new(StripeGateway::new(&settings.stripe)?),
        };
        let context = web::Data::new(ServiceContext {
            pool: pool.clone(),
            gateway,
            lease_timeout: settings.lease_timeout,
            installation_id,
        });
        let listener = TcpListener::bind(&settings.bind_addr)
            .with_context(|| format!("cannot bind {}", settings.bind_addr))?;
        let address = listener.local_addr()?;
        let mut server = HttpServer::new(move || {
            App::new()
                .wrap(Logger::new(r#"%a "%r" %s %b %Dms"#))
                .app_data(context.clone())
                .app_data(routing::path_config())
                .app_data(routing::query_config())
                .route("/healthz", web::get().to(health::healthz))
                .route("/readyz", web::get().to(health::readyz))
                .service(web::scope("/api").configure(rides::routes::configure))
                .default_service(web::to(routing::not_found))
        })
        .listen(listener)?;
        if settings.http_workers > 0 {
            server = server.workers(settings.http_workers);
        }
        Ok(Application {
            address,
            server: server.run(),
            pool,
        })
    }

    /// The address actually bound.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    pub fn pool(&self) -> &DbPool {
        &self.pool
    }

    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}
