//! SIGINT and SIGTERM for the subcommands that run until stopped without an
//! async runtime (`fake-gateway`): blocked on the main thread before any
//! other starts, so that every thread inherits the mask and the main thread
//! alone takes them, in `wait`.

use nix::sys::signal::{SigSet, SigmaskHow, Signal};

pub fn block() -> anyhow::Result<SigSet> {
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None)?;
    Ok(set)
}

/// Waits for one of `set`, and names it.
pub fn wait(set: &SigSet) -> anyhow::Result<Signal> {
    Ok(set.wait()?)
}
