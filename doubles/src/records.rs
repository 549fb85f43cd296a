//! Where the doubles keep their records: their tables' migrations, and the
//! fake Stripe's own pool on its records database.

use std::time::Duration;

use diesel::pg::PgConnection;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};

/// The `simulated_*` tables. Their versions sit among the service's (they
/// were one chain once), so a database that has both keeps one history.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations");

/// A pool on a database of the doubles' own.
pub type RecordsPool = Pool<ConnectionManager<PgConnection>>;

/// Applies the doubles' pending migrations (and nothing of the service's):
/// for a records database of their own.
pub fn run_migrations(conn: &mut PgConnection) -> Result<(), String> {
    conn.run_pending_migrations(MIGRATIONS)
        .map(drop)
        .map_err(|err| format!("cannot migrate the doubles' tables: {err}"))
}

/// A pool that connects on first use.
pub fn records_pool(database_url: &str) -> RecordsPool {
    Pool::builder()
        .max_size(10)
        .min_idle(Some(0))
        .connection_timeout(Duration::from_secs(5))
        .build_unchecked(ConnectionManager::new(database_url))
}
