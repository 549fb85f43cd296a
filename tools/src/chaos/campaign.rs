//! The campaign from start to verdict: PostgreSQL, the gateway, two instances,
//! the webhook receivers (the user's, a bystander's and the installation's
//! receipts), the platform's drivers, the clients, the killer and what
//! moves the drivers' accounts, the turn of the completer, the webhook
//! sender and the transfer worker, the audit.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;

use super::audit::{self, CHECKS};
use super::drivers::Drivers;
use super::fleet::Fleet;
use super::gateway::Gateway;
use super::history::{Counters, KeyHistory};
use super::options::Options;
use super::receiver::Receiver;
use super::retrying_client::Sender;
use super::ride_life::{run_client, Platform};
use super::summary::{Summary, SERVER_EVENTS};
use crate::client::RideClient;
use crate::ridepay::{var, LogCounts};
use crate::stage::Stage;

const INSTANCES: usize = 2;
/// What every instance signs receipts with: `whsec_` and the base64 of 32
/// bytes.
const RECEIPT_SECRET: &str = "whsec_Y2hhb3MtY2FtcGFpZ24tcmVjZWlwdHMtc2lnbmluZy0=";
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
    let bystander = ridepay.create_user(&format!(
        "chaos-bystander-{}@ridepay.dev",
        uuid::Uuid::new_v4().simple()
    ))?;
    let platform = ridepay.create_platform_user(&format!(
        "chaos-platform-{}@ridepay.dev",
        uuid::Uuid::new_v4().simple()
    ))?;
    let users = [user.user_id, platform.user_id];

    let gateway = Gateway::start(&options, &ridepay, &database)?;
    let receipts = Receiver::start()?;
    receipts.set_secret(RECEIPT_SECRET.to_owned());
    let envs = (0..INSTANCES)
        .map(|index| {
            let receipts = vec![
                var("RECEIPT_WEBHOOK_URL", &receipts.url),
                var("RECEIPT_WEBHOOK_SECRET", RECEIPT_SECRET),
            ];
            [instance_env(), receipts, gateway.instance_env(index)].concat()
        })
        .collect();
    let logs = LogCounts::new(&SERVER_EVENTS);
    let checker = ridepay.clone();
    let controls = ridepay.clone();
    let fleet = Arc::new(Fleet::start(ridepay, envs, logs.clone())?);
    let counters = Arc::new(Counters::default());
    eprintln!(
        "chaos: {} clients for {:?} (at most {} requests), {INSTANCES} instances, {:?} gateway",
        options.clients, options.duration, options.max_requests, options.gateway
    );

    let receiver = Receiver::start()?;
    let bystanders = Receiver::start()?;
    register(&fleet, &user.api_key, &receiver)?;
    register(&fleet, &bystander.api_key, &bystanders)?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut histories = Vec::new();
    let drivers = runtime.block_on(async {
        let sender = Sender::new(
            &fleet,
            &counters,
            &options,
            &platform.api_key,
            Instant::now(),
        )?;
        Drivers::onboard(
            &sender,
            &fleet,
            controls,
            gateway.records_url(),
            &mut histories,
        )
        .await
    })?;
    let drivers = Arc::new(drivers);

    let began = Instant::now();
    histories.extend(runtime.block_on(attack(
        &fleet,
        &counters,
        &options,
        [&user.api_key, &platform.api_key],
        &drivers,
        began + options.duration,
    ))?);
    let elapsed = began.elapsed();

    // The completer needs a live instance to finish what clients left.
    for index in 0..fleet.len() {
        fleet.restart(index)?;
    }
    let settle_began = Instant::now();
    while (audit::unfinished_keys(&mut conn, &users)? > 0
        || audit::pending_deliveries(&mut conn)? > 0
        || audit::pay_unsettled(&mut conn)? > 0)
        && settle_began.elapsed() < options.settle_limit
    {
        std::thread::sleep(Duration::from_millis(500));
    }
    let settle = settle_began.elapsed();
    let mut report = audit::audit(
        &mut conn,
        &mut gateway.records()?,
        &users,
        started,
        &histories,
        &audit::Deliveries {
            taken: receiver.taken(),
            bystanders: bystanders.taken(),
            receipts: receipts.taken(),
        },
    )?;
    fleet.stop_all();
    for violation in checker.ledger_violations(&gateway.command_env())? {
        report.flag(CHECKS[25], violation);
    }

    let summary = Summary {
        elapsed,
        histories: &histories,
        counters: &counters,
        moves: &drivers.moves,
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

/// Registers `receiver` as a destination of every event of the user whose
/// key is `api_key`, and gives it the secret to verify with.
fn register(fleet: &Fleet, api_key: &str, receiver: &Receiver) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let client = RideClient::new(api_key, Duration::from_secs(5))?;
    let body = serde_json::json!({"url": receiver.url, "events": ["*"]}).to_string();
    let key = uuid::Uuid::new_v4().to_string();
    for _ in 0..40 {
        let Some(address) = fleet.pick() else {
            std::thread::sleep(Duration::from_millis(250));
            continue;
        };
        let answer = runtime.block_on(client.post(
            &address,
            "/api/webhook_endpoints",
            &key,
            body.clone().into(),
        ));
        match answer {
            Ok(answer) if answer.status == 201 => {
                let registered: serde_json::Value = serde_json::from_slice(&answer.body)?;
                let secret = registered["secret"].as_str().unwrap_or_default();
                receiver.set_secret(secret.to_owned());
                return Ok(());
            }
            Ok(answer) if answer.status < 500 && answer.status != 409 => {
                anyhow::bail!(
                    "registering {}: {} {}",
                    receiver.url,
                    answer.status,
                    String::from_utf8_lossy(&answer.body)
                )
            }
            _ => std::thread::sleep(Duration::from_millis(250)),
        }
    }
    anyhow::bail!("registering {} never got an answer", receiver.url)
}

/// The clients, the killer and what moves the drivers' accounts, until the
/// deadline or the request budget; `api_keys` the rider's and the
/// platform's.
async fn attack(
    fleet: &Arc<Fleet>,
    counters: &Arc<Counters>,
    options: &Options,
    api_keys: [&str; 2],
    drivers: &Arc<Drivers>,
    deadline: Instant,
) -> anyhow::Result<Vec<KeyHistory>> {
    let began = Instant::now();
    let killer = tokio::spawn(kill_at_random(
        fleet.clone(),
        counters.clone(),
        options.kill_interval,
        deadline,
    ));
    let mover = {
        let (fleet, drivers, options) = (fleet.clone(), drivers.clone(), options.clone());
        let client = RideClient::new(api_keys[1], options.request_timeout)?;
        tokio::spawn(async move {
            drivers
                .move_at_random(&fleet, &client, &options, began, deadline)
                .await
        })
    };
    let clients: Vec<_> = (0..options.clients)
        .map(|_| {
            let (fleet, counters, options, drivers) = (
                fleet.clone(),
                counters.clone(),
                options.clone(),
                drivers.clone(),
            );
            let [rider_key, platform_key] = api_keys.map(str::to_owned);
            tokio::spawn(async move {
                let sender = Sender::new(&fleet, &counters, &options, &rider_key, deadline)?;
                let platform = Platform {
                    sender: Sender::new(&fleet, &counters, &options, &platform_key, deadline)?,
                    drivers: &drivers,
                };
                run_client(sender, platform).await
            })
        })
        .collect();
    let mut histories = Vec::new();
    for client in clients {
        histories.extend(client.await??);
    }
    killer.await??;
    mover.await??;
    Ok(histories)
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
/// outbox's sender of webhooks on; the transfer worker several times a
/// second, reading a driver's account again once what it knows is 10 s old
/// (a restriction whose event is late is caught by the worker too); no
/// reaper; no per-key rate limit (one user sends everything, and the
/// limiter is not what the campaign tests).
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
        var("TRANSFER_WORKER_ENABLED", true),
        var("TRANSFER_WORKER_INTERVAL_MS", 300),
        // A killed instance's claims run out well within the settle limit.
        var("TRANSFER_CLAIM_SECS", 8),
        var("DRIVER_STATUS_MAX_AGE_SECS", 10),
        var("REAPER_ENABLED", false),
        // The receivers listen on loopback; short timeouts and a quick
        // schedule, so deliveries end within the settle limit.
        var("OUTBOUND_WEBHOOK_ALLOW_LOOPBACK", true),
        var("OUTBOUND_WEBHOOK_TIMEOUT_SECS", 2),
        var(
            "OUTBOUND_WEBHOOK_RETRY_SCHEDULE_SECS",
            "0,1,1,1,1,2,2,2,2,2,3,3,3,3,5,5,5,5,5,5",
        ),
    ]
}
