//! What every tool run stands on: the `ridepay` binary, a PostgreSQL, and a
//! user of its own (so a shared `DATABASE_URL` keeps runs apart).

use diesel::PgConnection;

use crate::binary::ridepay_binary;
use crate::database::Database;
use crate::ridepay::{ApiUser, Ridepay};

pub struct Stage {
    pub ridepay: Ridepay,
    pub user: ApiUser,
    pub conn: PgConnection,
    /// Dropped last: it stops the private cluster.
    pub database: Database,
}

impl Stage {
    /// `tool` names the private cluster's folder and the user's email.
    pub fn set(tool: &str, explicit_binary: Option<&std::path::Path>) -> anyhow::Result<Stage> {
        let binary = ridepay_binary(explicit_binary)?;
        let database = Database::start(tool)?;
        let ridepay = Ridepay {
            binary,
            database_url: database.url.clone(),
            // Warnings only: the per-request access log would cost the server
            // time and the tools nothing to read.
            log_level: "warn".to_owned(),
        };
        let user = ridepay.create_user(&format!(
            "{tool}-{}@ridepay.dev",
            uuid::Uuid::new_v4().simple()
        ))?;
        let conn = database.connect()?;
        Ok(Stage {
            ridepay,
            user,
            conn,
            database,
        })
    }
}
