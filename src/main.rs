use clap::Parser;

fn main() {
    ridepay::telemetry::logging::init_logging();
    if let Err(err) = ridepay::cli::run(ridepay::cli::Cli::parse()) {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
