//! The PostgreSQL a run uses: `DATABASE_URL` when set, else a private cluster
//! under the system temp directory that stops, and is deleted, when the tool
//! ends for any reason.

use std::path::PathBuf;

use diesel::PgConnection;
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
            url: cluster.database_url("ridepay"),
            cluster: Some(cluster),
        })
    }

    pub fn connect(&self) -> anyhow::Result<PgConnection> {
        connect_with_retry(&self.url)
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
