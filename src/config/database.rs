//! The database: where it is, how ridepay connects, what each session may
//! take (`DATABASE_*`), and the embedded PostgreSQL's folder
//! (`RIDEPAY_DATA_DIR`) when no `DATABASE_URL` is set.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;

use super::conninfo::Conninfo;
use super::source::Source;

#[derive(Debug, Clone)]
pub struct DatabaseSettings {
    /// None: run the embedded PostgreSQL of `data_dir`.
    pub url: Option<String>,
    /// Where migrations and their session advisory lock go, past any
    /// transaction-mode pooler; None: `url`.
    pub direct_url: Option<String>,
    /// Diesel's named prepared statements. A transaction-mode pooler without
    /// prepared-statement support (PgBouncer before 1.21) would run one
    /// client's statement for another: off there, every statement unnamed.
    pub prepared_statements: bool,
    pub pool_size: u32,
    pub statement_timeout: Duration,
    pub lock_timeout: Duration,
    pub idle_in_transaction_timeout: Duration,
    /// The embedded PostgreSQL's folder (and the demo user's key).
    pub data_dir: PathBuf,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        DatabaseSettings {
            url: None,
            direct_url: None,
            prepared_statements: true,
            pool_size: 10,
            statement_timeout: Duration::from_secs(5),
            lock_timeout: Duration::from_secs(2),
            idle_in_transaction_timeout: Duration::from_secs(10),
            data_dir: PathBuf::from(".ridepay"),
        }
    }
}

impl DatabaseSettings {
    pub(super) fn read(source: &Source) -> anyhow::Result<Self> {
        let d = DatabaseSettings::default();
        Ok(DatabaseSettings {
            url: source.text("DATABASE_URL")?,
            direct_url: source.text("DATABASE_DIRECT_URL")?,
            prepared_statements: source
                .switch("DATABASE_PREPARED_STATEMENTS", d.prepared_statements)?,
            pool_size: source.var("DATABASE_POOL_SIZE", d.pool_size)?,
            statement_timeout: source
                .millis("DATABASE_STATEMENT_TIMEOUT_MS", d.statement_timeout)?,
            lock_timeout: source.millis("DATABASE_LOCK_TIMEOUT_MS", d.lock_timeout)?,
            idle_in_transaction_timeout: source.millis(
                "DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS",
                d.idle_in_transaction_timeout,
            )?,
            data_dir: source.var("RIDEPAY_DATA_DIR", d.data_dir)?,
        })
    }

    pub(super) fn check(&self) -> anyhow::Result<()> {
        if self.pool_size == 0 {
            bail!("DATABASE_POOL_SIZE must be at least 1");
        }
        for (name, url) in [
            ("DATABASE_URL", &self.url),
            ("DATABASE_DIRECT_URL", &self.direct_url),
        ] {
            let Some(url) = url else { continue };
            Conninfo::parse(url).map_err(|refused| {
                anyhow::anyhow!(
                    "{name} is not a connection string libpq accepts (a postgres:// URL, \
                     several hosts and query parameters included, or keyword=value pairs): \
                     {refused}"
                )
            })?;
        }
        if self.direct_url.is_some() && self.url.is_none() {
            bail!("DATABASE_DIRECT_URL needs DATABASE_URL: the embedded PostgreSQL has no pooler");
        }
        Ok(())
    }
}
