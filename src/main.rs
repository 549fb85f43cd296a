use clap::Parser;

fn main() {
    if let Err(err) = ridepay::config::load_dotenv() {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
    ridepay::telemetry::logging::init_logging();
    if let Err(err) = ridepay::cli::run(ridepay::cli::Cli::parse()) {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
