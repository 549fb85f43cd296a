//! The background workers of one instance: completer, reconciliation,
//! reaper, the outbox's sender of webhooks, the maker of drivers'
//! transfers and, with the simulated gateway,
//! the sender of its events, each a thread on its own interval. Each is
//! safe to run on every instance at once (see their modules), so there is
//! no leader to elect.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::backoff::Backoff;
use crate::config::Settings;
use crate::context::ServiceContext;
use crate::doorbell::Doorbell;
use crate::drivers::{reversals, transfers};
use crate::endpoints;
use crate::idempotency::completer::{self, CompleterSettings, Resumable};
use crate::idempotency::reaper;
use crate::reconciliation::{self, PassOptions, Summary};
use crate::user_webhooks::delivery::Sender;

#[cfg(feature = "simulated")]
mod simulated_events;

/// Running workers; `stop` ends them after their current pass.
pub struct Workers {
    stop: Arc<(Mutex<bool>, Condvar)>,
    /// Rung at the stop too, so that no worker waits at its door.
    doorbells: Vec<Arc<Doorbell>>,
    threads: Vec<JoinHandle<()>>,
}

/// The least time between two passes of a worker its doorbell wakes.
const RUNG_GAP: Duration = Duration::from_millis(50);

impl Workers {
    pub fn start(settings: &Settings, context: Arc<ServiceContext>) -> anyhow::Result<Workers> {
        let mut workers = Workers {
            stop: Arc::new((Mutex::new(false), Condvar::new())),
            doorbells: Vec::new(),
            threads: Vec::new(),
        };
        if settings.completer.enabled {
            let completer_settings = CompleterSettings {
                policy: context.key_policy,
                batch_size: 100,
                max_attempts: settings.completer.max_attempts,
                backoff: Backoff {
                    base: Duration::from_secs(2),
                    max: Duration::from_secs(10 * 60),
                },
            };
            let resumable = endpoints::resumable(&context);
            let pool = context.pool.clone();
            workers.spawn("completer", settings.completer.interval, move || {
                let endpoints: Vec<&dyn Resumable> = resumable.iter().map(AsRef::as_ref).collect();
                match completer::run_once(&pool, &endpoints, &completer_settings) {
                    Ok(report) if report != Default::default() => {
                        log::info!("completer: {report:?}")
                    }
                    Ok(_) => {}
                    Err(err) => log::error!("completer pass failed: {err}"),
                }
            });
        }
        if settings.reconcile.enabled {
            let resumable = endpoints::resumable(&context);
            let context = context.clone();
            let reconcile = settings.reconcile.clone();
            workers.spawn("reconcile", reconcile.interval, move || {
                let endpoints: Vec<&dyn Resumable> = resumable.iter().map(AsRef::as_ref).collect();
                let options = PassOptions::default();
                match reconciliation::run_pass(&context, &endpoints, &reconcile, options) {
                    Ok(summary) if summary != Summary::default() && !summary.skipped => {
                        log::info!("reconciliation: {summary:?}")
                    }
                    Ok(_) => {}
                    Err(err) => log::error!("reconciliation pass failed: {err}"),
                }
            });
        }
        if settings.reaper.enabled {
            let pool = context.pool.clone();
            let retention = settings.keys.retention;
            workers.spawn("reaper", settings.reaper.interval, move || {
                match pool
                    .get()
                    .map_err(anyhow::Error::from)
                    .and_then(|mut conn| Ok(reaper::reap(&mut conn, retention)?))
                {
                    Ok(0) => {}
                    Ok(deleted) => log::info!("reaper deleted {deleted} finished keys"),
                    Err(err) => log::error!("reaper pass failed: {err:#}"),
                }
            });
        }
        if settings.user_webhooks.enabled {
            let sender = Sender::new(context.pool.clone(), &settings.user_webhooks);
            workers.spawn("webhooks", settings.user_webhooks.interval, move || {
                if let Err(err) = sender.run_once() {
                    log::error!("webhook delivery pass failed: {err:#}");
                }
            });
        }
        if settings.drivers.transfers.enabled {
            let context = context.clone();
            workers.spawn_rung(
                "transfers",
                settings.drivers.transfers.interval,
                context.drivers.transfers_due.clone(),
                move || {
                    match transfers::make_due(&context, 100) {
                        Ok(made) if made != Default::default() => log::info!("transfers: {made:?}"),
                        Ok(_) => {}
                        Err(err) => log::error!("transfer pass failed: {err}"),
                    }
                    match reversals::make_due(&context, 100) {
                        Ok(done) if done != Default::default() => {
                            log::info!("transfer reversals: {done:?}")
                        }
                        Ok(_) => {}
                        Err(err) => log::error!("transfer reversal pass failed: {err}"),
                    }
                },
            );
        }
        #[cfg(feature = "simulated")]
        simulated_events::start(&mut workers, settings, context);
        Ok(workers)
    }

    fn spawn(&mut self, name: &str, interval: Duration, mut pass: impl FnMut() + Send + 'static) {
        let stop = self.stop.clone();
        let thread = thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || loop {
                pass();
                if stopped_within(&stop, interval) {
                    return;
                }
            })
            .expect("spawn a worker thread");
        self.threads.push(thread);
    }

    /// A worker that a ring of `doorbell` wakes before its interval is up:
    /// after at most `RUNG_GAP`, so that a stream of rings costs a pass per
    /// gap, not one per ring.
    fn spawn_rung(
        &mut self,
        name: &str,
        interval: Duration,
        doorbell: Arc<Doorbell>,
        mut pass: impl FnMut() + Send + 'static,
    ) {
        let stop = self.stop.clone();
        self.doorbells.push(doorbell.clone());
        let gap = RUNG_GAP.min(interval);
        let thread = thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || loop {
                pass();
                if stopped_within(&stop, gap) {
                    return;
                }
                doorbell.wait(interval - gap);
                if stopped_within(&stop, Duration::ZERO) {
                    return;
                }
            })
            .expect("spawn a worker thread");
        self.threads.push(thread);
    }

    /// Signals every worker and waits for its current pass to end.
    pub fn stop(mut self) {
        self.signal_stop();
        for thread in std::mem::take(&mut self.threads) {
            let _ = thread.join();
        }
    }

    fn signal_stop(&self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().expect("worker stop flag") = true;
        wake.notify_all();
        for doorbell in &self.doorbells {
            doorbell.ring();
        }
    }
}

/// Waits up to `timeout` for the workers to be stopped; whether they were.
fn stopped_within(stop: &(Mutex<bool>, Condvar), timeout: Duration) -> bool {
    let (stopped, wake) = stop;
    let guard = stopped.lock().expect("worker stop flag");
    let (guard, _) = wake
        .wait_timeout_while(guard, timeout, |stopped| !*stopped)
        .expect("worker stop flag");
    *guard
}

/// Workers dropped without `stop` (a server future dropped unfinished, as
/// tests leave theirs) stop after their current pass, so no thread keeps
/// its pool's connections.
impl Drop for Workers {
    fn drop(&mut self) {
        self.signal_stop();
    }
}
