//! SQL for tests: a statement run, and a count read, on test-owned tables.
use diesel::{Connection, PgConnection, RunQueryDsl};

/// Runs `statement`, which must succeed.
pub fn sql(conn: &mut PgConnection, statement: &str) {
    diesel::sql_query(statement).execute(conn).unwrap();
}

/// `SELECT count(*) FROM <from_where>`.
pub fn count(conn: &mut PgConnection, from_where: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    diesel::sql_query(format!("SELECT count(*) AS count FROM {from_where}"))
        .get_result::<Count>(conn)
        .unwrap()
        .count
}

/// `count` on a connection of its own to `url`.
pub fn count_at(url: &str, from_where: &str) -> i64 {
    count(&mut PgConnection::establish(url).unwrap(), from_where)
}

/// Reverts the newest migrations, down to the one whose version ends with
/// `last`, that one included.
pub fn revert_through(conn: &mut PgConnection, last: &str) {
    use diesel_migrations::MigrationHarness;
    while !conn
        .revert_last_migration(ridepay::db::MIGRATIONS)
        .unwrap()
        .to_string()
        .ends_with(last)
    {}
}
