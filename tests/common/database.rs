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

/// Deletes the rides `which` selects (a condition on `rides`) with their
/// charges and what the ledger posted for them, as an asynchronous failover
/// loses a commit: the ledger's append-only triggers are off only inside
/// this transaction, so no other session sees them off.
pub fn lose_rides(conn: &mut PgConnection, which: &str) {
    const GUARDS: [(&str, &str); 3] = [
        ("ledger_entries", "ledger_entries_append_only"),
        ("ledger_transactions", "ledger_transactions_append_only"),
        ("charges", "charges_append_only"),
    ];
    let rides = format!("SELECT id FROM rides WHERE {which}");
    let transactions = format!("SELECT id FROM ledger_transactions WHERE ride_id IN ({rides})");
    conn.transaction(|conn| {
        for (table, trigger) in GUARDS {
            sql(
                conn,
                &format!("ALTER TABLE {table} DISABLE TRIGGER {trigger}"),
            );
        }
        sql(
            conn,
            &format!("DELETE FROM ledger_entries WHERE transaction_id IN ({transactions})"),
        );
        sql(
            conn,
            &format!("DELETE FROM ledger_transactions WHERE id IN ({transactions})"),
        );
        sql(
            conn,
            &format!("DELETE FROM charges WHERE ride_id IN ({rides})"),
        );
        sql(conn, &format!("DELETE FROM rides WHERE {which}"));
        for (table, trigger) in GUARDS {
            sql(
                conn,
                &format!("ALTER TABLE {table} ENABLE TRIGGER {trigger}"),
            );
        }
        Ok::<_, diesel::result::Error>(())
    })
    .unwrap();
}
