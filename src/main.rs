use clap::Parser;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        // At trace level ureq-proto dumps the raw request, Stripe's
        // Authorization header included: capped here whatever RUST_LOG says.
        .filter_module("ureq_proto", log::LevelFilter::Debug)
        .init();
    if let Err(err) = ridepay::cli::run(ridepay::cli::Cli::parse()) {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
