//! Building and running one instance: the HTTP application and its
//! background workers (`workers`).

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use anyhow::Context;
use diesel::Connection;

use crate::config::{self, DriverContext, GatewayKind, Settings};
use crate::context::ServiceContext;
use crate::db::{self, DbPool};
#[cfg(feature = "simulated")]
use crate::http::authentication_page::{self, SimulatedGatewayPages};
#[cfg(feature = "simulated")]
use crate::http::onboarding_page;
use crate::http::server::{self, Server};
use crate::http::{driver_pages, payment_return};
use crate::http_client::destination::DestinationPolicy;
use crate::idempotency::KeyPolicy;
use crate::payments::{PaymentGateway, StripeGateway};
use crate::public_ids::IdSecret;
use crate::user_webhooks;
#[cfg(feature = "simulated")]
use ridepay_doubles::{events::Double, intents::IntentSettings, SimulatedGateway};
use workers::Workers;

mod workers;

pub struct Application {
    address: SocketAddr,
    server: Server,
    pool: DbPool,
    workers: Workers,
}

/// What the database made once for this installation.
pub struct Installation {
    /// Part of every derived gateway key.
    pub id: uuid::Uuid,
    pub id_secret: IdSecret,
}

impl Installation {
    pub fn load(conn: &mut diesel::PgConnection) -> anyhow::Result<Installation> {
        use crate::schema::installation;
        use diesel::{QueryDsl, RunQueryDsl};
        let (id, secret) = installation::table
            .select((installation::installation_id, installation::id_secret))
            .first::<(uuid::Uuid, Vec<u8>)>(conn)?;
        let secret = secret
            .try_into()
            .map_err(|_| anyhow::anyhow!("the installation's id secret is not 32 bytes"))?;
        Ok(Installation {
            id,
            id_secret: IdSecret::new(secret),
        })
    }
}

/// What every service call needs: the pool, the gateway `GATEWAY` names,
/// the key policy, and where riders' browsers reach the service
/// (`public_base`).
pub fn service_context(
    settings: &Settings,
    pool: DbPool,
    installation: Installation,
    public_base: &str,
) -> anyhow::Result<ServiceContext> {
    let gateway: Arc<dyn PaymentGateway> = match settings.gateway.kind {
        #[cfg(feature = "simulated")]
        GatewayKind::Simulated => Arc::new(
            SimulatedGateway::new(pool.clone(), settings.gateway.simulated.clone())
                .with_authentication_page(format!("{public_base}{}", authentication_page::PATH))
                .with_onboarding_page(format!("{public_base}{}", onboarding_page::PATH))
                .with_in_flight_hook(|| crate::crash::point(crate::crash::GATEWAY_IN_FLIGHT)),
        ),
        GatewayKind::Stripe => Arc::new(StripeGateway::new(&settings.gateway.stripe)?),
    };
    Ok(ServiceContext {
        pool,
        gateway,
        key_policy: KeyPolicy {
            lease_timeout: settings.keys.lease_timeout,
            effect_deadline: settings.completer.charge_deadline,
        },
        installation_id: installation.id,
        id_secret: installation.id_secret,
        return_url: format!("{public_base}{}", payment_return::PATH),
        destinations: DestinationPolicy {
            allow_loopback: settings.user_webhooks.allow_loopback,
        },
        drivers: DriverContext {
            country: settings.drivers.platform_country.clone(),
            commission_bps: settings.drivers.commission_bps,
            pages: format!("{public_base}{}", driver_pages::PATH),
            livemode: settings.gateway.is_live(),
            status_max_age: settings.drivers.status_max_age,
            claim: settings.drivers.claim,
            transfers_due: Default::default(),
        },
    })
}

impl Application {
    /// Connects to `database_url`, applies pending migrations and binds
    /// `settings.bind_addr` (port 0 picks a free port).
    pub fn build(settings: &Settings, database_url: &str) -> anyhow::Result<Application> {
        // One plain connection first: an unreachable database is one clear
        // error at once, not a pool retrying for its whole timeout.
        let installation = {
            let connect = |url: &str| {
                diesel::PgConnection::establish(url).with_context(|| {
                    format!(
                        "cannot connect to the database at {}",
                        config::conninfo::mask(url)
                    )
                })
            };
            // Migrations take a session advisory lock: past any pooler.
            let direct_url = settings.database.direct_url.as_deref();
            let mut conn = connect(direct_url.unwrap_or(database_url))?;
            db::run_migrations(&mut conn)?;
            user_webhooks::installation::configure(
                &mut conn,
                settings.user_webhooks.receipts.as_ref(),
            )
            .context("cannot set up the destination of receipts")?;
            if direct_url.is_some() {
                conn = connect(database_url)?;
            }
            // As the role the pool connects as.
            db::set_session_defaults(&mut conn, &settings.database)?;
            Installation::load(&mut conn)?
        };
        let listener = TcpListener::bind(&settings.server.bind_addr)
            .with_context(|| format!("cannot bind {}", settings.server.bind_addr))?;
        let address = listener.local_addr()?;
        // Where riders' browsers reach this server.
        let public_base = settings
            .server
            .public_base_url
            .clone()
            .unwrap_or_else(|| format!("http://{address}"));
        let public_base = public_base.trim_end_matches('/');
        let pool = db::build_pool(database_url, &settings.database);
        // The simulated gateway's pages are served here.
        #[cfg(feature = "simulated")]
        let simulated_pages =
            (settings.gateway.kind == GatewayKind::Simulated).then(|| SimulatedGatewayPages {
                pool: pool.clone(),
                settings: IntentSettings {
                    double: Double::Simulated,
                    authentication_page: format!("{public_base}{}", authentication_page::PATH),
                    authorization_ttl: settings.gateway.simulated.authorization_ttl,
                    extended_authorization_ttl: settings
                        .gateway
                        .simulated
                        .extended_authorization_ttl,
                },
            });
        #[cfg(not(feature = "simulated"))]
        let simulated_pages = None;
        let context = Arc::new(service_context(
            settings,
            pool.clone(),
            installation,
            public_base,
        )?);
        let workers = Workers::start(settings, context.clone())?;
        let server = server::start(settings, listener, context, simulated_pages)?;
        Ok(Application {
            address,
            server,
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
        self.server.stop_on_signals()?;
        self.run_until_stopped().await
    }

    /// Serves until the server is stopped (tests and tools run it so, and
    /// leave the process's signals alone), then stops the workers.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = self.server.stopped().await;
        let workers = self.workers;
        // Joining threads blocks; keep it off the async runtime.
        let _ = tokio::task::spawn_blocking(move || workers.stop()).await;
        result
    }
}
