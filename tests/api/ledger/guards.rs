//! What the database refuses of the ledger, whoever writes it: a
//! transaction that does not balance in each currency, one without
//! entries or whose hash is not its entries', and any change to what was
//! posted.

use diesel::{Connection, PgConnection, RunQueryDsl};

use crate::common::app::spawn_app;
use crate::common::database::count;

/// A transaction posting `entries` (account code, amount) under `source`,
/// its hash computed as the ledger computes it.
fn post(conn: &mut PgConnection, source: &str, entries: &[(&str, i64)]) -> diesel::QueryResult<()> {
    let mut lines: Vec<String> = entries
        .iter()
        .map(|(code, amount)| format!("{code} {amount}"))
        .collect();
    lines.sort();
    let canonical = lines.join("\n");
    conn.transaction(|conn| {
        diesel::sql_query(
            "INSERT INTO ledger_transactions (kind, source, entries_hash) \
             VALUES ('capture', $1, sha256(convert_to($2, 'UTF8')))",
        )
        .bind::<diesel::sql_types::Text, _>(source)
        .bind::<diesel::sql_types::Text, _>(&canonical)
        .execute(conn)?;
        for (code, amount) in entries {
            diesel::sql_query(
                "INSERT INTO ledger_entries (transaction_id, account_id, amount_cents) \
                 SELECT t.id, a.id, $3 FROM ledger_transactions t, ledger_accounts a \
                 WHERE t.source = $1 AND a.code = $2",
            )
            .bind::<diesel::sql_types::Text, _>(source)
            .bind::<diesel::sql_types::Text, _>(*code)
            .bind::<diesel::sql_types::BigInt, _>(*amount)
            .execute(conn)?;
        }
        Ok(())
    })
}

fn refused_for(result: diesel::QueryResult<()>, why: &str) {
    let err = result.expect_err("the database refuses it");
    assert!(err.to_string().contains(why), "{err}");
}

#[tokio::test]
async fn only_balanced_transactions_with_their_own_hash_commit() {
    let app = spawn_app().await;
    let mut conn = app.db();
    post(
        &mut conn,
        "test:balanced",
        &[("gateway:usd", 1000), ("platform:unassigned:usd", -1000)],
    )
    .unwrap();

    refused_for(
        post(
            &mut conn,
            "test:short",
            &[("gateway:usd", 1000), ("platform:unassigned:usd", -900)],
        ),
        "does not balance",
    );
    // Balanced in sum, not in each currency.
    refused_for(
        post(
            &mut conn,
            "test:currencies",
            &[("gateway:usd", 1000), ("platform:unassigned:eur", -1000)],
        ),
        "does not balance",
    );
    refused_for(post(&mut conn, "test:empty", &[]), "has no entries");
    // A hash that is not the entries'.
    let forged = conn.transaction(|conn| {
        diesel::sql_query(
            "INSERT INTO ledger_transactions (kind, source, entries_hash) \
             VALUES ('capture', 'test:forged', sha256('gateway:usd 5'))",
        )
        .execute(conn)?;
        diesel::sql_query(
            "INSERT INTO ledger_entries (transaction_id, account_id, amount_cents) \
             SELECT t.id, a.id, CASE a.code WHEN 'gateway:usd' THEN 7 ELSE -7 END \
             FROM ledger_transactions t, ledger_accounts a \
             WHERE t.source = 'test:forged' AND a.code IN ('gateway:usd', 'platform:fees:usd')",
        )
        .execute(conn)
        .map(drop)
    });
    refused_for(forged, "hash");
    // What the posting function checked as it posted is checked again at
    // commit once an entry is added to it; it refuses what does not balance.
    let added = conn.transaction(|conn| {
        diesel::sql_query(
            "SELECT ridepay_ledger_post('capture', 'test:checked', NULL, NULL, \
             ARRAY['gateway:usd', 'platform:unassigned:usd'], ARRAY[100, -100]::bigint[])",
        )
        .execute(conn)?;
        diesel::sql_query(
            "INSERT INTO ledger_entries (transaction_id, account_id, amount_cents) \
             SELECT t.id, a.id, 1 FROM ledger_transactions t, ledger_accounts a \
             WHERE t.source = 'test:checked' AND a.code = 'fx:usd'",
        )
        .execute(conn)
        .map(drop)
    });
    refused_for(added, "does not balance");
    refused_for(
        diesel::sql_query(
            "SELECT ridepay_ledger_post('capture', 'test:unbalanced', NULL, NULL, \
             ARRAY['gateway:usd', 'platform:unassigned:usd'], ARRAY[100, -99]::bigint[])",
        )
        .execute(&mut conn)
        .map(drop),
        "does not balance",
    );
    // Entries in two currencies, named out of their codes' order: the
    // posting function balances each currency and hashes them in order.
    let mut two_currencies = |source: &str, amounts: [i64; 4]| {
        diesel::sql_query(format!(
            "SELECT ridepay_ledger_post('capture', '{source}', NULL, NULL, \
             ARRAY['platform:unassigned:eur', 'gateway:usd', 'fx:usd', 'fx:eur'], \
             ARRAY{amounts:?}::bigint[])"
        ))
        .execute(&mut conn)
        .map(drop)
    };
    two_currencies("test:fx", [-100, 120, -120, 100]).unwrap();
    refused_for(
        two_currencies("test:fx_short", [-120, 120, -100, 100]),
        "does not balance",
    );
    let canonical = "fx:eur 100\nfx:usd -120\ngateway:usd 120\nplatform:unassigned:eur -100";
    assert_eq!(
        count(
            &mut conn,
            &format!(
                "ledger_transactions WHERE source = 'test:fx' \
                 AND entries_hash = sha256(convert_to(E'{canonical}', 'UTF8'))"
            )
        ),
        1
    );
    // A movement is posted once.
    refused_for(
        post(
            &mut conn,
            "test:balanced",
            &[("gateway:usd", 1), ("platform:fees:usd", -1)],
        ),
        "ledger_transactions_source_key",
    );
    assert_eq!(count(&mut conn, "ledger_transactions"), 2);
    assert_eq!(count(&mut conn, "ledger_entries"), 6);
}

#[tokio::test]
async fn nothing_posted_is_ever_updated_deleted_or_truncated() {
    let app = spawn_app().await;
    let mut conn = app.db();
    post(
        &mut conn,
        "test:posted",
        &[("gateway:usd", 500), ("platform:unassigned:usd", -500)],
    )
    .unwrap();
    for statement in [
        "UPDATE ledger_entries SET amount_cents = amount_cents * 2",
        "DELETE FROM ledger_entries",
        "TRUNCATE ledger_entries",
        "UPDATE ledger_transactions SET source = 'test:other'",
        "DELETE FROM ledger_transactions",
        "TRUNCATE ledger_transactions CASCADE",
        "UPDATE ledger_accounts SET kind = 'asset'",
        "DELETE FROM ledger_accounts WHERE code = 'fx:usd'",
        "TRUNCATE ledger_accounts CASCADE",
        "TRUNCATE rides CASCADE",
    ] {
        let refused = diesel::sql_query(statement).execute(&mut conn);
        let err = refused.expect_err(statement).to_string();
        assert!(err.contains("append-only"), "{statement}: {err}");
    }
    // Nor is anything added to it.
    let appended = diesel::sql_query(
        "INSERT INTO ledger_entries (transaction_id, account_id, amount_cents) \
         SELECT t.id, a.id, 1 FROM ledger_transactions t, ledger_accounts a \
         WHERE t.source = 'test:posted' AND a.code = 'fx:usd'",
    )
    .execute(&mut conn);
    let err = appended.expect_err("an entry added later").to_string();
    assert!(err.contains("was posted earlier"), "{err}");
    assert_eq!(
        count(
            &mut conn,
            "ledger_entries WHERE amount_cents IN (500, -500)"
        ),
        2
    );
    assert_eq!(count(&mut conn, "ledger_entries"), 2);
}
