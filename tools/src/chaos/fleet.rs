//! The ridepay instances under attack: started, SIGKILLed and restarted, with
//! the address of each live one for the clients.

use std::sync::{Arc, Mutex, RwLock};

use rand::seq::SliceRandom;

use crate::process::Announced;
use crate::ridepay::{LogCounts, Ridepay};

pub struct Fleet {
    ridepay: Ridepay,
    /// Each instance's environment, the same at every restart.
    envs: Vec<Vec<(String, String)>>,
    logs: Arc<LogCounts>,
    processes: Vec<Mutex<Option<Announced>>>,
    addresses: RwLock<Vec<Option<String>>>,
}

impl Fleet {
    /// One instance per environment in `envs`.
    pub fn start(
        ridepay: Ridepay,
        envs: Vec<Vec<(String, String)>>,
        logs: Arc<LogCounts>,
    ) -> anyhow::Result<Fleet> {
        let instances = envs.len();
        let fleet = Fleet {
            ridepay,
            envs,
            logs,
            processes: (0..instances).map(|_| Mutex::new(None)).collect(),
            addresses: RwLock::new(vec![None; instances]),
        };
        for index in 0..instances {
            fleet.restart(index)?;
        }
        Ok(fleet)
    }

    pub(crate) fn len(&self) -> usize {
        self.processes.len()
    }

    /// A live instance's address, chosen at random as a load balancer would.
    pub fn pick(&self) -> Option<String> {
        let addresses = self.addresses.read().unwrap();
        let live: Vec<&String> = addresses.iter().flatten().collect();
        live.choose(&mut rand::thread_rng()).map(|a| (*a).clone())
    }

    /// SIGKILL, after taking the instance out of the clients' choice.
    pub fn kill(&self, index: usize) {
        self.addresses.write().unwrap()[index] = None;
        if let Some(mut process) = self.processes[index].lock().unwrap().take() {
            process.kill();
        }
    }

    /// Starts the instance (again), unless it runs: on a new port, unless
    /// its environment names one (`BIND_ADDR`).
    pub fn restart(&self, index: usize) -> anyhow::Result<()> {
        let mut slot = self.processes[index].lock().unwrap();
        if slot.is_some() {
            return Ok(());
        }
        let process = self
            .ridepay
            .serve(&self.envs[index], Some(self.logs.clone()))?;
        self.addresses.write().unwrap()[index] = Some(process.address.clone());
        *slot = Some(process);
        Ok(())
    }

    pub fn stop_all(&self) {
        for index in 0..self.len() {
            self.kill(index);
        }
    }
}
