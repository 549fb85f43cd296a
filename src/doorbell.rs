//! A doorbell: how a request that has left work for a background worker
//! wakes it at once, instead of when the worker's interval is up.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

#[derive(Debug, Default)]
pub struct Doorbell {
    rung: Mutex<bool>,
    bell: Condvar,
}

impl Doorbell {
    /// Wakes the worker waiting at the door, or ends its next wait at once.
    pub fn ring(&self) {
        *self.rung.lock().expect("doorbell") = true;
        self.bell.notify_all();
    }

    /// Waits until the bell rings or `timeout` passes, and answers it.
    pub fn wait(&self, timeout: Duration) {
        let rung = self.rung.lock().expect("doorbell");
        let (mut rung, _) = self
            .bell
            .wait_timeout_while(rung, timeout, |rung| !*rung)
            .expect("doorbell");
        *rung = false;
    }
}
