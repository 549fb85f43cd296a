//! `ridepay serve`, and the embedded default's demo user.

use std::path::Path;

use super::database;
use crate::config::Settings;
use crate::startup::Application;
use crate::users;

const DEMO_EMAIL: &str = "demo@ridepay.dev";
const DEMO_CUSTOMER: &str = "cus_demo";
/// Stripe's test card, saved to the demo user.
const DEMO_PAYMENT_METHOD: &str = "pm_card_visa";
const DEMO_KEY_FILE: &str = "demo-api-key";

fn keep_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    Ok(())
}

pub fn run(settings: Settings) -> anyhow::Result<()> {
    log::info!("{}", settings.summary());
    let database = database(&settings)?;
    if let Some(cluster) = &database.cluster {
        log::info!(
            "using the embedded PostgreSQL of {} on its socket in {}",
            settings.database.data_dir.display(),
            cluster.socket_dir().display()
        );
    }
    crate::http::server::block_on(async {
        let app = Application::build(&settings, &database.url)?;
        println!("ridepay listening on http://{}", app.address());
        if database.cluster.is_some() {
            print_demo_user(
                &mut *app.pool().get()?,
                app.address(),
                &settings.database.data_dir,
            )?;
        }
        app.run_until_signalled().await?;
        anyhow::Ok(())
    })
}

/// The embedded default's demo user: created once. Only a key's hash is
/// stored, so its key is also kept in the data folder (0600, beside the
/// cluster's own password) and printed again by every start, a second
/// instance's included, for as long as it is the user's key.
fn print_demo_user(
    conn: &mut diesel::PgConnection,
    address: std::net::SocketAddr,
    data_dir: &Path,
) -> anyhow::Result<()> {
    let kept = data_dir.join(DEMO_KEY_FILE);
    let still_valid = std::fs::read_to_string(&kept)
        .ok()
        .map(|text| users::ApiKey::from_stored(text.trim()))
        .filter(|key| {
            users::find_by_api_key_hash(conn, &users::hash_api_key(key.expose()))
                .ok()
                .flatten()
                .is_some_and(|user| user.email == DEMO_EMAIL)
        });
    let key = match (still_valid, users::find_by_email(conn, DEMO_EMAIL)?) {
        (Some(key), _) => key,
        (None, Some(user)) => users::rotate_key(conn, user.id)?,
        (None, None) => {
            let card = users::SavedCard {
                customer: Some(DEMO_CUSTOMER),
                payment_method: Some(DEMO_PAYMENT_METHOD),
            };
            users::create(conn, DEMO_EMAIL, card)?.1
        }
    };
    keep_private(&kept, key.expose())?;
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
