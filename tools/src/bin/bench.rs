//! `bench`: see `ridepay_tools::bench` and BENCHMARKS.md.

use std::process::ExitCode;

use clap::Parser;
use ridepay_tools::bench::{self, Options};

fn main() -> ExitCode {
    match bench::run(Options::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("bench: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
