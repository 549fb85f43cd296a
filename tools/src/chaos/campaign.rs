//! The campaign from start to verdict: PostgreSQL, the gateway, two instances,
//! the clients and the killer, the completer's turn, the audit.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;

use super::audit::{self, CHECKS};
use super::fleet::Fleet;
use super::gateway::Gateway;
use super::history::{Counters, KeyHistory};
use super::options::Options;
use super::ride_life::run_client;
use super::summary::{Summary, SERVER_EVENTS};
use crate::ridepay::{var, LogCounts};
use crate::stage::Stage;

const INSTANCES: usize = 2;
const EXAMPLES_SHOWN: usize = 5;

/// Runs the campaign and prints its summary. Ok(false): violations found.
pub fn run(options: Options) -> anyhow::Result<bool> {
    let Stage {
        ridepay,
        user,
        mut conn,
        database,
    } = Stage::set("chaos", options.ridepay_bin.as_deref())?;
    let started = ridepay::db::now(&mut conn)?;

    let gateway = Gateway::start(&options, &ridepay, &database)?;
    let envs = (0..INSTANCES)
        .map(|index| [instance_env(), gateway.instance_env(index)].concat())
        .collect();
    let logs = LogCounts::new(&SERVER_EVENTS);
    let fleet = Arc::new(Fleet::start(ridepay, envs, logs.clone())?);
    let counters = Arc::new(Counters::default());
    eprintln!(
        "chaos: {} clients for {:?} (at most {} requests), {INSTANCES} instances, {:?} gateway",
        options.clients, options.duration, options.max_requests, options.gateway
    );

    let began = Instant::now();
    let histories = attack(
        &fleet,
        &counters,
        &options,
        &user.api_key,
        began + options.duration,
    )?;
    let elapsed = began.elapsed();

    // The completer needs a live instance to finish what clients left.
    for index in 0..fleet.len() {
        fleet.restart(index)?;
    }
    let settle_began = Instant::now();
    while audit::unfinished_keys(&mut conn, user.user_id)? > 0
        && settle_began.elapsed() < options.settle_limit
    {
        std::thread::sleep(Duration::from_millis(500));
    }
    let settle = settle_began.elapsed();
    let report = audit::audit(
        &mut conn,
        &mut gateway.ledger()?,
        user.user_id,
        started,
        &histories,
    )?;
    fleet.stop_all();

    let summary = Summary {
        elapsed,
        histories: &histories,
        counters: &counters,
        logs: &logs,
        settle,
        audit: &report,
    };
    println!("{}", summary.table().to_text());
    for check in CHECKS {
        for example in report
            .violations
            .get(check)
            .into_iter()
            .flatten()
            .take(EXAMPLES_SHOWN)
        {
            println!("VIOLATION {check}: {example}");
        }
    }
    Ok(report.is_clean())
}

/// The clients and the killer, until the deadline or the request budget.
fn attack(
    fleet: &Arc<Fleet>,
    counters: &Arc<Counters>,
    options: &Options,
    api_key: &str,
    deadline: Instant,
) -> anyhow::Result<Vec<KeyHistory>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let killer = tokio::spawn(kill_at_random(
            fleet.clone(),
            counters.clone(),
            options.kill_interval,
            deadline,
        ));
        let clients: Vec<_> = (0..options.clients)
            .map(|_| {
                let (fleet, counters, options, api_key) = (
                    fleet.clone(),
                    counters.clone(),
                    options.clone(),
                    api_key.to_owned(),
                );
                tokio::spawn(async move {
                    run_client(&fleet, &counters, &options, &api_key, deadline).await
                })
            })
            .collect();
        let mut histories = Vec::new();
        for client in clients {
            histories.extend(client.await??);
        }
        killer.await??;
        Ok(histories)
    })
}

/// SIGKILLs a random instance at random intervals, and restarts it after a
/// random downtime, until the deadline.
async fn kill_at_random(
    fleet: Arc<Fleet>,
    counters: Arc<Counters>,
    mean_interval: Duration,
    deadline: Instant,
) -> anyhow::Result<()> {
    loop {
        let (pause, index, downtime) = {
            let mut rng = rand::thread_rng();
            (
                mean_interval.mul_f64(rng.gen_range(0.5..1.5)),
                rng.gen_range(0..fleet.len()),
                Duration::from_millis(rng.gen_range(0..300)),
            )
        };
        if Instant::now() + pause >= deadline {
            return Ok(());
        }
        tokio::time::sleep(pause).await;
        let fleet = fleet.clone();
        counters.kills.fetch_add(1, Ordering::Relaxed);
        tokio::task::spawn_blocking(move || {
            fleet.kill(index);
            std::thread::sleep(downtime);
            fleet.restart(index)
        })
        .await??;
    }
}

/// Every instance: short lease, completer and reconciliation intervals, so
/// abandoned keys are taken over and finished, and keys whose answer the
/// gateway saved as a 500 resolved, within the campaign (reconciliation looks
/// them up at once, and releases a payment no ride records after 10 s); the
/// outbox on; no reaper; no per-key rate limit (one user sends everything,
/// and the limiter is not what the campaign tests).
fn instance_env() -> Vec<(String, String)> {
    vec![
        var("HTTP_WORKERS", 2),
        var("DATABASE_POOL_SIZE", 8),
        var("IDEMPOTENCY_LEASE_SECS", 3),
        var("RATE_LIMIT_PER_SECOND", 0),
        var("RATE_LIMIT_ADDRESS_PER_SECOND", 0),
        var("COMPLETER_ENABLED", true),
        var("COMPLETER_INTERVAL_SECS", 1),
        var("RECONCILE_ENABLED", true),
        var("RECONCILE_INTERVAL_SECS", 1),
        var("RECONCILE_SEARCH_LAG_SECS", 0),
        var("RECONCILE_ORPHAN_GRACE_SECS", 10),
        var("OUTBOX_ENABLED", true),
        var("OUTBOX_INTERVAL_SECS", 1),
        var("REAPER_ENABLED", false),
    ]
}
