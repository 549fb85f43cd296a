//! Behind a real PgBouncer in transaction mode (Debian's 1.18, which cannot
//! keep prepared statements: one server session serves many clients, one
//! transaction at a time), with `DATABASE_PREPARED_STATEMENTS=off` and
//! migrations on `DATABASE_DIRECT_URL`: every ride is made as its own
//! request asked (no statement runs with another client's), replays are
//! byte-identical, and every server session has the service's limits, which
//! no `SET` could give it here. Under `CI=true` a missing PgBouncer fails
//! the test; elsewhere it is skipped, saying so.

use diesel::{Connection, PgConnection, RunQueryDsl};
use futures_util::stream::{self, StreamExt};

use crate::common::app::{database_only, ride_with};
use crate::common::pgbouncer::{pgbouncer_binary, PgBouncer};
use crate::common::server_process::ServerProcess;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_pgbouncer_in_transaction_mode_every_ride_is_its_own_and_sessions_keep_their_limits()
{
    let Some(binary) = pgbouncer_binary() else {
        return;
    };
    let app = database_only();
    let pooler = PgBouncer::start(&binary, &app.database_url, "transaction");
    let pooled = pooler.url(&app.database_url);
    let server = ServerProcess::start(
        &pooled,
        &[
            ("DATABASE_DIRECT_URL", &app.database_url),
            ("DATABASE_PREPARED_STATEMENTS", "off"),
            ("DATABASE_STATEMENT_TIMEOUT_MS", "4321"),
            ("DATABASE_POOL_SIZE", "8"),
        ],
    );
    let app = &app;

    // Each key's ride has its own amount: a statement run with another
    // client's parameters would show as a ride of the wrong amount.
    let answers: Vec<(i64, crate::common::app::Answer)> = stream::iter(0..60)
        .map(|i| {
            let address = server.address.clone();
            async move {
                let amount = 1000 + i;
                let body = ride_with(serde_json::json!({ "amount_cents": amount }));
                let answer = app
                    .post_ride_to(&address, &app.user.api_key, &format!("pooled-{i}"), &body)
                    .await;
                (amount, answer)
            }
        })
        .buffer_unordered(12)
        .collect()
        .await;
    for (amount, answer) in &answers {
        assert_eq!(answer.status, 201, "{}", answer.body_text());
        assert_eq!(answer.json()["amount_cents"], *amount);
        let replay = app
            .post_ride_to(
                &server.address,
                &app.user.api_key,
                &format!("pooled-{}", amount - 1000),
                &ride_with(serde_json::json!({ "amount_cents": amount })),
            )
            .await;
        assert_eq!(replay.body, answer.body);
        assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    }
    assert_eq!(app.counts(), (60, 60, 60));

    // The server sessions PgBouncer opened have the service's limit from
    // their start, as the role's default: nothing was SET on them.
    let mut through_pooler = PgConnection::establish(&pooled).unwrap();
    #[derive(diesel::QueryableByName)]
    struct Setting {
        #[diesel(sql_type = diesel::sql_types::Text)]
        statement_timeout: String,
    }
    let setting: Setting = diesel::sql_query("SHOW statement_timeout")
        .get_result(&mut through_pooler)
        .unwrap();
    assert_eq!(setting.statement_timeout, "4321ms");
}
