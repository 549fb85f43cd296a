//! The platform's drivers: registered through the API by the platform's
//! retrying client, their accounts activated at the gateway and their
//! status learnt from their return page (Connect events tell ridepay too);
//! then, while the clients ride, the gateway moving their balances as time
//! and Stripe's automatic payouts would (pending funds made available, the
//! available balance paid out, so that reversals are made or refused), and
//! one driver restricted and reactivated mid-run.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use rand::Rng;
use tokio::sync::{RwLock, RwLockReadGuard};

use super::fleet::Fleet;
use super::history::{KeyHistory, Request, Tally};
use super::options::Options;
use super::retrying_client::Sender;
use crate::client::{RegisteredDriver, RideClient};
use crate::ridepay::Ridepay;

/// How long ridepay gets to learn that a driver's account is active.
const LEARN_LIMIT: Duration = Duration::from_secs(60);
const LEARN_PAUSE: Duration = Duration::from_millis(250);
pub struct Driver {
    pub registered: RegisteredDriver,
    /// Whether clients may assign them rides: not while restricted. An
    /// assignment holds it read across its request, so a restriction waits
    /// for the assignments in flight, which ridepay would refuse once it
    /// knows.
    assignable: RwLock<bool>,
}

/// The drivers and what moves their accounts at the gateway.
pub struct Drivers {
    pub drivers: Vec<Driver>,
    ridepay: Ridepay,
    records_url: String,
    /// What the gateway was told, by kind, for the summary.
    pub moves: Tally,
}

/// What the gateway is told to do to an account, as `ridepay
/// simulated-gateway` names it.
const RESTRICT: &str = "restrict-account";
const ACTIVATE: &str = "activate-account";
const MAKE_AVAILABLE: &str = "make-available";
const PAY_OUT: &str = "pay-out";

impl Drivers {
    /// Registers `options.drivers` drivers under the platform's `sender`
    /// and waits until ridepay knows each one active; the registrations'
    /// histories go to `histories`.
    pub async fn onboard(
        sender: &Sender<'_>,
        fleet: &Fleet,
        ridepay: Ridepay,
        records_url: &str,
        histories: &mut Vec<KeyHistory>,
    ) -> anyhow::Result<Drivers> {
        let mut drivers = Drivers {
            drivers: Vec::new(),
            ridepay,
            records_url: records_url.to_owned(),
            moves: Tally::default(),
        };
        for _ in 0..sender.options.drivers {
            let email = format!("chaos-driver-{}@ridepay.dev", uuid::Uuid::new_v4().simple());
            let history = sender.send(Request::Driver { email }).await;
            let registered = history
                .first_final
                .as_ref()
                .map(RegisteredDriver::from_answer);
            histories.push(history);
            let driver = Driver {
                registered: registered.context("a driver's registration got no answer")??,
                assignable: RwLock::new(true),
            };
            drivers
                .control(ACTIVATE, &driver.registered.account)
                .await?;
            learn_active(fleet, sender.client(), &driver).await?;
            drivers.drivers.push(driver);
        }
        Ok(drivers)
    }

    /// A driver clients may assign a ride to now, at random, held so until
    /// the guard is dropped.
    pub async fn assignable(&self) -> Option<(&Driver, RwLockReadGuard<'_, bool>)> {
        let first = rand::thread_rng().gen_range(0..self.drivers.len());
        for offset in 0..self.drivers.len() {
            let driver = &self.drivers[(first + offset) % self.drivers.len()];
            let assignable = driver.assignable.read().await;
            if *assignable {
                return Some((driver, assignable));
            }
        }
        None
    }

    /// Until `deadline`: a driver's balance moved at random now and then,
    /// and the first driver restricted for the middle third of the run
    /// (`began` to `deadline`), then reactivated and learnt active again.
    pub async fn move_at_random(
        &self,
        fleet: &Fleet,
        client: &RideClient,
        options: &Options,
        began: Instant,
        deadline: Instant,
    ) -> anyhow::Result<()> {
        let third = (deadline - began) / 3;
        let restricted = &self.drivers[0];
        // When the restriction starts, then ends.
        let mut restriction = [began + third, began + 2 * third].into_iter().peekable();
        loop {
            let (pause, driver, control) = {
                let mut rng = rand::thread_rng();
                let control = match rng.gen_bool(options.pay_out_share) {
                    true => PAY_OUT,
                    false => MAKE_AVAILABLE,
                };
                (
                    options.balance_interval.mul_f64(rng.gen_range(0.5..1.5)),
                    &self.drivers[rng.gen_range(0..self.drivers.len())],
                    control,
                )
            };
            if Instant::now() + pause >= deadline {
                break;
            }
            tokio::time::sleep(pause).await;
            match restriction.next_if(|at| Instant::now() >= *at) {
                Some(_) if restriction.peek().is_some() => {
                    *restricted.assignable.write().await = false;
                    self.control(RESTRICT, &restricted.registered.account)
                        .await?;
                }
                Some(_) => self.reactivate(fleet, client, restricted).await?,
                None => self.control(control, &driver.registered.account).await?,
            }
        }
        if !*restricted.assignable.read().await {
            self.reactivate(fleet, client, restricted).await?;
        }
        Ok(())
    }

    async fn reactivate(
        &self,
        fleet: &Fleet,
        client: &RideClient,
        driver: &Driver,
    ) -> anyhow::Result<()> {
        self.control(ACTIVATE, &driver.registered.account).await?;
        learn_active(fleet, client, driver).await?;
        *driver.assignable.write().await = true;
        Ok(())
    }

    async fn control(&self, control: &'static str, account: &str) -> anyhow::Result<()> {
        let (ridepay, records_url, account) = (
            self.ridepay.clone(),
            self.records_url.clone(),
            account.to_owned(),
        );
        tokio::task::spawn_blocking(move || {
            ridepay.gateway_control(&records_url, control, &account)
        })
        .await??;
        self.moves.add(control);
        Ok(())
    }
}

/// Opens the driver's return page, as the driver back from the gateway's
/// onboarding does, until it says they can be paid: ridepay reads the
/// account from the gateway and records its status.
async fn learn_active(fleet: &Fleet, client: &RideClient, driver: &Driver) -> anyhow::Result<()> {
    let began = Instant::now();
    while began.elapsed() < LEARN_LIMIT {
        if let Some(address) = fleet.pick() {
            let page = client.get(&address, &driver.registered.return_path).await;
            if page.is_ok_and(|page| page.says_driver_active()) {
                return Ok(());
            }
        }
        tokio::time::sleep(LEARN_PAUSE).await;
    }
    bail!(
        "ridepay did not learn driver {} active within {LEARN_LIMIT:?}",
        driver.registered.id
    )
}
