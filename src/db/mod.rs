//! The connection pool and the embedded migrations.

mod recorded;

pub use recorded::{recorded, ChangeCtes, Recorded};
#[cfg(debug_assertions)]
pub use ridepay_diesel_helpers::sql_text;
pub use ridepay_diesel_helpers::{database_now, CacheStatement};

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::connection::{CacheSize, Connection};
use diesel::migration::{Migration, MigrationSource, MigrationVersion};
use diesel::pg::Pg;
use diesel::pg::PgConnection;
use diesel::r2d2::{
    ConnectionManager, CustomizeConnection, ManageConnection, Pool, PooledConnection,
};
use diesel::sql_types::Text;
use diesel::{QueryResult, RunQueryDsl};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};

use crate::config::conninfo::Conninfo;
use crate::config::DatabaseSettings;
use crate::telemetry::log_throttle::LogThrottle;

pub type DbPool = Pool<Connections>;
pub type DbConn = PooledConnection<Connections>;

/// The service's own tables.
const SERVICE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations");

/// What `run_migrations` applies: the service's migrations and, with the
/// simulated gateway, the doubles' (`simulated_*` tables), as one history,
/// in the order of their versions, which interleave (they were one chain).
#[derive(Debug, Clone, Copy)]
pub struct Migrations;

pub const MIGRATIONS: Migrations = Migrations;

impl MigrationSource<Pg> for Migrations {
    fn migrations(&self) -> diesel::migration::Result<Vec<Box<dyn Migration<Pg>>>> {
        let all = SERVICE_MIGRATIONS.migrations()?;
        #[cfg(feature = "simulated")]
        let all = {
            let mut all = all;
            all.extend(ridepay_doubles::MIGRATIONS.migrations()?);
            all.sort_by(|a, b| a.name().version().cmp(&b.name().version()));
            all
        };
        Ok(all)
    }
}

/// An arbitrary constant shared by every ridepay instance: the advisory lock that
/// lets several instances start at once without racing on migrations.
const MIGRATION_LOCK_ID: i64 = 0x0072_6964_6570_6179;

/// The limits every session of the service gets, so that no request can
/// wait on a lock, run a statement or sit in an open transaction forever:
/// the service role's defaults in its database, set at start-up and by
/// `ridepay migrate`, so that a session has them from its first statement,
/// through any pooler. A `SET` would not hold behind a transaction-mode
/// pooler (it hands one server session to many clients, and would leak the
/// setting to whichever client came next), and PgBouncer refuses a
/// connection's startup `options`.
pub fn set_session_defaults(
    conn: &mut PgConnection,
    settings: &DatabaseSettings,
) -> QueryResult<()> {
    let millis = |limit: Duration| format!("{}ms", limit.as_millis());
    diesel::sql_query("SELECT ridepay_set_session_limits($1, $2, $3)")
        .bind::<Text, _>(millis(settings.statement_timeout))
        .bind::<Text, _>(millis(settings.lock_timeout))
        .bind::<Text, _>(millis(settings.idle_in_transaction_timeout))
        .execute(conn)?;
    Ok(())
}

/// What each new connection of the pool is set up with, without a round
/// trip: Diesel's statement cache off where prepared statements are.
#[derive(Debug, Clone, Copy)]
struct ConnectionSetup {
    prepared_statements: bool,
}

impl CustomizeConnection<PgConnection, diesel::r2d2::Error> for ConnectionSetup {
    fn on_acquire(&self, conn: &mut PgConnection) -> Result<(), diesel::r2d2::Error> {
        if !self.prepared_statements {
            conn.set_prepared_statement_cache_size(CacheSize::Disabled);
        }
        Ok(())
    }
}

/// r2d2 logs every failed attempt to open a connection as an ERROR: while
/// the database is away, several lines a second, all alike. One warning per
/// ten seconds says as much.
#[derive(Debug)]
struct ConnectErrors;

static CONNECT_ERROR_LOG: LogThrottle = LogThrottle::per(Duration::from_secs(10));

impl diesel::r2d2::HandleError<diesel::r2d2::Error> for ConnectErrors {
    fn handle_error(&self, error: diesel::r2d2::Error) {
        if CONNECT_ERROR_LOG.allows() {
            log::warn!("cannot open a database connection: {error} (logged at most every 10 s)");
        }
    }
}

/// Opens connections as Diesel's manager does, and checks an idle one
/// without a round trip before it is handed out.
///
/// r2d2's own check is a `SELECT 1` at every checkout: a round trip per
/// transaction. But a connection the server closed while it sat idle (a
/// terminated backend, a restart) has already told the client so: the
/// server's FATAL message and the end of the stream wait in the socket.
/// Reading what is there, without waiting, finds them (libpq's
/// `PQconsumeInput`, which Diesel calls to collect notifications; nothing
/// here LISTENs, so there is never a notification to lose). A connection
/// that breaks mid-request is marked broken by Diesel and dropped when it
/// returns to the pool.
#[derive(Debug)]
pub struct Connections(ConnectionManager<PgConnection>);

impl ManageConnection for Connections {
    type Connection = PgConnection;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<PgConnection, Self::Error> {
        self.0.connect()
    }

    fn is_valid(&self, conn: &mut PgConnection) -> Result<(), Self::Error> {
        // The first read takes in what the server sent before it closed;
        // the second meets the end of the stream.
        for _ in 0..2 {
            if let Some(Err(err)) = conn.notifications_iter().next() {
                return Err(diesel::r2d2::Error::QueryError(err));
            }
        }
        Ok(())
    }

    fn has_broken(&self, conn: &mut PgConnection) -> bool {
        // Both asked, so the mark is cleared whatever the other says.
        let unusable = crate::service_error::take_connection_unusable();
        self.0.has_broken(conn) || unusable
    }
}

/// The connection string with `application_name` ridepay unless it names
/// one: how operators (and the tests) tell the service's sessions.
fn named(database_url: &str) -> String {
    Conninfo::parse(database_url).map_or_else(
        |_| database_url.to_owned(),
        |info| info.with_default("fallback_application_name", "ridepay"),
    )
}

/// Builds the pool without connecting: connections open on first use, so a
/// server can start while the database is briefly away.
pub fn build_pool(database_url: &str, settings: &DatabaseSettings) -> DbPool {
    Pool::builder()
        .max_size(settings.pool_size)
        .min_idle(Some(0))
        .connection_timeout(Duration::from_secs(5))
        // The check at checkout is `Connections::is_valid`: no round trip.
        .test_on_check_out(true)
        .event_handler(Box::new(crate::telemetry::metrics::PoolEvents))
        .error_handler(Box::new(ConnectErrors))
        .connection_customizer(Box::new(ConnectionSetup {
            prepared_statements: settings.prepared_statements,
        }))
        .build_unchecked(Connections(ConnectionManager::new(named(database_url))))
}

/// Applies pending migrations under a session advisory lock, so instances
/// starting together apply each migration exactly once.
pub fn run_migrations(conn: &mut PgConnection) -> anyhow::Result<()> {
    migrate(conn, "applied", |conn| {
        conn.run_pending_migrations(MIGRATIONS)
    })
}

/// Reverts every migration, dropping all data: for development, and for the
/// test that every `down.sql` works.
pub fn revert_all_migrations(conn: &mut PgConnection) -> anyhow::Result<()> {
    migrate(conn, "reverted", |conn| {
        conn.revert_all_migrations(MIGRATIONS)
    })
}

/// Runs `step` under the migration lock and logs each version it `did`.
fn migrate(
    conn: &mut PgConnection,
    did: &str,
    step: impl for<'c> FnOnce(
        &'c mut PgConnection,
    ) -> diesel::migration::Result<Vec<MigrationVersion<'c>>>,
) -> anyhow::Result<()> {
    diesel::sql_query("SELECT pg_advisory_lock($1)")
        .bind::<diesel::sql_types::BigInt, _>(MIGRATION_LOCK_ID)
        .execute(conn)?;
    let result = step(conn)
        .map(|versions| {
            for version in versions {
                log::info!("{did} migration {version}");
            }
        })
        .map_err(|err| anyhow::anyhow!("migrations not {did}: {err}"));
    diesel::sql_query("SELECT pg_advisory_unlock($1)")
        .bind::<diesel::sql_types::BigInt, _>(MIGRATION_LOCK_ID)
        .execute(conn)?;
    result
}

/// True when every embedded migration has been applied.
pub fn migrations_applied(conn: &mut PgConnection) -> anyhow::Result<bool> {
    let pending = conn
        .has_pending_migration(MIGRATIONS)
        .map_err(|err| anyhow::anyhow!("cannot read the migration table: {err}"))?;
    Ok(!pending)
}

/// The database's current time.
pub fn now(conn: &mut PgConnection) -> QueryResult<DateTime<Utc>> {
    diesel::select(database_now()).get_result(conn)
}

/// A span of time as chrono counts it, saturating rather than failing.
pub fn span(duration: Duration) -> chrono::Duration {
    chrono::Duration::from_std(duration).unwrap_or(chrono::Duration::MAX)
}

/// A span of time as PostgreSQL's `interval`, for times reckoned on the
/// database's clock (`now() + $1`), which every instance shares.
pub fn interval(duration: Duration) -> diesel::pg::data_types::PgInterval {
    diesel::pg::data_types::PgInterval::from_microseconds(
        i64::try_from(duration.as_micros()).unwrap_or(i64::MAX),
    )
}

/// The SQL text of `changes`' CTEs, for debug builds' checks of what a
/// statement says.
#[cfg(debug_assertions)]
pub fn ctes_text(changes: &dyn ChangeCtes) -> String {
    struct Ctes<'a>(&'a dyn ChangeCtes);
    impl diesel::query_builder::QueryFragment<Pg> for Ctes<'_> {
        fn walk_ast<'b>(
            &'b self,
            out: diesel::query_builder::AstPass<'_, 'b, Pg>,
        ) -> QueryResult<()> {
            self.0.walk_ctes(out)
        }
    }
    sql_text(&Ctes(changes))
}
