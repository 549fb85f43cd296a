//! Connecting to the cluster, and the service's own role there: an
//! ordinary one (no superuser, no `CREATEDB`, no `CREATEROLE`) that owns its
//! database, set up with the superuser's password, which serves for nothing
//! else.

use std::time::{Duration, Instant};

use anyhow::Context;

/// The role's name, and its database's.
pub(super) const SERVICE_ROLE: &str = "ridepay";
pub(super) const SERVICE_DATABASE: &str = "ridepay";

/// What the set-up connects with: as the superuser to the maintenance
/// database and to the service's database, and as the service.
pub(super) struct Admin<'a> {
    pub maintenance_url: String,
    pub database_url: String,
    pub service_url: String,
    pub service_password: &'a str,
}

/// The service's role (an ordinary one, its password the record's) and
/// its database, owned by it. A database made by an earlier release,
/// owned by the superuser, is handed over with everything in it.
pub(super) fn prepare(admin: &Admin<'_>) -> anyhow::Result<()> {
    use diesel::sql_types::Text;
    use diesel::{OptionalExtension, RunQueryDsl};
    let mut conn = connect_with_retry(&admin.maintenance_url)?;
    let password = admin.service_password;
    // The password goes in as a bound value; `format('%L')` quotes it
    // inside the server, for a statement that takes no parameters.
    diesel::sql_query("SELECT set_config('ridepay.service_password', $1, false)")
        .bind::<Text, _>(password)
        .execute(&mut conn)?;
    diesel::sql_query(
        "DO $$ BEGIN \
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ridepay') THEN \
             CREATE ROLE ridepay LOGIN; \
           END IF; \
           EXECUTE format('ALTER ROLE ridepay NOSUPERUSER NOCREATEDB NOCREATEROLE LOGIN \
             PASSWORD %L', current_setting('ridepay.service_password')); \
         END $$",
    )
    .execute(&mut conn)?;
    diesel::sql_query("SELECT set_config('ridepay.service_password', '', false)")
        .execute(&mut conn)?;
    #[derive(diesel::QueryableByName)]
    struct Owner {
        #[diesel(sql_type = Text)]
        owner: String,
    }
    let owner = diesel::sql_query(
        "SELECT pg_get_userbyid(datdba)::text AS owner FROM pg_database WHERE datname = 'ridepay'",
    )
    .get_result::<Owner>(&mut conn)
    .optional()?;
    match owner {
        None => {
            if let Err(err) =
                diesel::sql_query("CREATE DATABASE ridepay OWNER ridepay").execute(&mut conn)
            {
                // A concurrent creator may win the race; that is fine.
                connect_with_retry(&admin.service_url).map_err(|_| err)?;
            }
        }
        Some(Owner { owner }) if owner == SERVICE_ROLE => {}
        Some(_) => {
            diesel::sql_query("ALTER DATABASE ridepay OWNER TO ridepay").execute(&mut conn)?;
            let mut database = connect_with_retry(&admin.database_url)?;
            diesel::sql_query(HAND_OVER_OBJECTS).execute(&mut database)?;
        }
    }
    Ok(())
}

/// Gives everything of a database made by an earlier release, which the
/// superuser owned, to the service's role (sequences that belong to a
/// column follow their table; an extension's objects stay its own).
const HAND_OVER_OBJECTS: &str = "DO $$ DECLARE object record; BEGIN
  FOR object IN SELECT c.oid::regclass AS name FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
        AND c.relowner <> 'ridepay'::regrole
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')
  LOOP
    EXECUTE format('ALTER TABLE %s OWNER TO ridepay', object.name);
  END LOOP;
  FOR object IN SELECT c.oid::regclass AS name FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind = 'S' AND c.relowner <> 'ridepay'::regrole
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')
  LOOP
    EXECUTE format('ALTER SEQUENCE %s OWNER TO ridepay', object.name);
  END LOOP;
  FOR object IN SELECT p.oid::regprocedure AS name FROM pg_proc p
      JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = 'public' AND p.proowner <> 'ridepay'::regrole
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
  LOOP
    EXECUTE format('ALTER ROUTINE %s OWNER TO ridepay', object.name);
  END LOOP;
END $$";

/// Connects, waiting out the moments after a start when the server still
/// refuses connections.
pub fn connect_with_retry(url: &str) -> anyhow::Result<diesel::PgConnection> {
    use diesel::Connection;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match diesel::PgConnection::establish(url) {
            Ok(conn) => return Ok(conn),
            Err(err) if Instant::now() > deadline => {
                return Err(err).context("cannot connect to the local PostgreSQL")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}
