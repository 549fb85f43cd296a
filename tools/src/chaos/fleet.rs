//! The ridepay instances under attack: started, SIGKILLed and restarted, with
//! the address of each live one for the clients.

use std::sync::{Arc, Mutex, RwLock};

use rand::seq::SliceRandom;

use crate::process::Announced;
use crate::ridepay::{LogCounts, Ridepay};

pub struct Fleet {
    ridepay: Ridepay,
    env: Vec<(String, String)>,
    logs: Arc<LogCounts>,
    processes: Vec<Mutex<Option<Announced>>>,
    addresses: RwLock<Vec<Option<String>>>,
}

impl Fleet {
    pub fn start(
        ridepay: Ridepay,
        env: Vec<(String, String)>,
        logs: Arc<LogCounts>,
        instances: usize,
    ) -> anyhow::Result<Fleet> {
        let fleet = Fleet {
            ridepay,
            env,
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

    /// Starts the instance (again) on a new port, unless it runs.
    pub fn restart(&self, index: usize) -> anyhow::Result<()> {
        let mut slot = self.processes[index].lock().unwrap();
        if slot.is_some() {
            return Ok(());
        }
        let process = self.ridepay.serve(&self.env, Some(self.logs.clone()))?;
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
