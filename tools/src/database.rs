//! The PostgreSQL a run uses: `DATABASE_URL` when set, else a private cluster
//! under the system temp directory that stops, and is deleted, when the tool
//! ends for any reason; and databases of its own beside the run's.

use std::path::PathBuf;

use anyhow::Context;
use diesel::{PgConnection, RunQueryDsl};
use ridepay::embedded_postgres::{connect_with_retry, EmbeddedPostgres, StopMode};

pub struct Database {
    pub url: String,
    cluster: Option<EmbeddedPostgres>,
}

impl Database {
    pub fn start(tool: &str) -> anyhow::Result<Database> {
        if let Ok(url) = std::env::var("DATABASE_URL") {
            if !url.is_empty() {
                return Ok(Database { url, cluster: None });
            }
        }
        let dir: PathBuf = std::env::temp_dir().join(format!(
            "ridepay-{tool}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        let cluster = EmbeddedPostgres::ensure_running(&dir)?;
        cluster.stop_when_process_exits(&dir)?;
        Ok(Database {
            url: cluster.superuser_url("ridepay"),
            cluster: Some(cluster),
        })
    }

    pub fn connect(&self) -> anyhow::Result<PgConnection> {
        connect_with_retry(&self.url)
    }

    /// A new database on the same server, for a system that keeps its
    /// records apart from ridepay's (the fake gateway's). With
    /// `DATABASE_URL`, its role needs CREATEDB.
    pub fn create_beside(&self, purpose: &str) -> anyhow::Result<BesideDatabase> {
        let name = format!("ridepay_{purpose}_{}", uuid::Uuid::new_v4().simple());
        diesel::sql_query(format!("CREATE DATABASE {name}"))
            .execute(&mut self.connect()?)
            .with_context(|| format!("cannot create the database {name}"))?;
        let mut url = reqwest::Url::parse(&self.url).context("DATABASE_URL is not a URL")?;
        url.set_path(&name);
        Ok(BesideDatabase {
            url: url.into(),
            name,
            server_url: self.url.clone(),
        })
    }

    /// The private cluster, if this run started one.
    pub fn cluster(&self) -> Option<&EmbeddedPostgres> {
        self.cluster.as_ref()
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Some(cluster) = &self.cluster {
            if let Err(err) = cluster.stop(StopMode::Fast) {
                eprintln!("warning: cannot stop the private PostgreSQL: {err:#}");
            }
        }
    }
}

/// A database made by [`Database::create_beside`], dropped with whatever
/// is still connected to it when done.
pub struct BesideDatabase {
    pub url: String,
    name: String,
    /// The run's own database, to connect from for the drop.
    server_url: String,
}

impl Drop for BesideDatabase {
    fn drop(&mut self) {
        let dropped = connect_with_retry(&self.server_url).and_then(|mut conn| {
            diesel::sql_query(format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .execute(&mut conn)
            .map_err(anyhow::Error::from)
        });
        if let Err(err) = dropped {
            eprintln!("warning: cannot drop the database {}: {err:#}", self.name);
        }
    }
}
