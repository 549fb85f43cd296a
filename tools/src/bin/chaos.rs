//! `chaos`: see `ridepay_tools::chaos` and the README's "Chaos campaign".

use std::process::ExitCode;

use clap::Parser;
use ridepay_tools::chaos::{self, Options};

fn main() -> ExitCode {
    match chaos::run(Options::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("chaos: the audit found violations");
            ExitCode::FAILURE
        }
        Err(err) => {
            eprintln!("chaos: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
