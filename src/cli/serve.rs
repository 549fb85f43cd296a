//! `ridepay serve`, and the embedded default's demo user.

use std::path::Path;

use super::database;
use crate::config::Settings;
use crate::embedded_postgres::{EmbeddedPostgres, StopMode};
use crate::startup::Application;
use crate::users;

const DEMO_EMAIL: &str = "demo@ridepay.dev";
const DEMO_CUSTOMER: &str = "cus_demo";

pub fn run(settings: Settings) -> anyhow::Result<()> {
    log::info!("{}", settings.summary());
    let (url, cluster) = database(&settings)?;
    if let Some(cluster) = &cluster {
        log::info!(
            "using the embedded PostgreSQL of {} on 127.0.0.1:{}",
            settings.data_dir.display(),
            cluster.port()
        );
    }
    let result = actix_web::rt::System::new().block_on(async {
        let app = Application::build(&settings, &url)?;
        println!("ridepay listening on http://{}", app.address());
        if cluster.is_some() {
            print_demo_user(&mut *app.pool().get()?, app.address(), &settings.data_dir)?;
        }
        app.run_until_stopped().await?;
        anyhow::Ok(())
    });
    if let Some(cluster) = cluster.filter(EmbeddedPostgres::started_here) {
        cluster.stop(StopMode::Fast)?;
    }
    result
}

/// The embedded default's demo user: created once, and given a fresh API key at
/// every start, since only a key's hash is stored.
fn print_demo_user(
    conn: &mut diesel::PgConnection,
    address: std::net::SocketAddr,
    data_dir: &Path,
) -> anyhow::Result<()> {
    let key = match users::find_by_email(conn, DEMO_EMAIL)? {
        Some(user) => users::rotate_key(conn, user.id)?,
        None => users::create(conn, DEMO_EMAIL, Some(DEMO_CUSTOMER))?.1,
    };
    println!(
        "\nDemo user {DEMO_EMAIL} (data in {}), API key for this run:\n  {}\n\nTry:\n  \
         curl -i -X POST http://{address}/api/rides \\\n    -H 'Authorization: Bearer {}' \\\n    \
         -H 'Idempotency-Key: demo-1' -H 'Content-Type: application/json' \\\n    \
         -d '{{\"origin_lat\": 37.77, \"origin_lon\": -122.42, \"target_lat\": 37.80, \
         \"target_lon\": -122.27, \"amount_cents\": 2000}}'\n",
        data_dir.display(),
        key.expose(),
        key.expose()
    );
    Ok(())
}
