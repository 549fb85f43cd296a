//! Finding the `ridepay` binary the tools start.
//!
//! The tools are built by `cargo run -p ridepay-tools`, which does not build
//! ridepay's own binary; so a tool runs `cargo build -p ridepay` in its own
//! profile first (a no-op when nothing changed) and uses
//! `target/<profile>/ridepay`, next to itself. A run thus never measures or
//! attacks a stale server.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

const INHERITED_FROM_CARGO_RUN: [&str; 5] = [
    "CARGO_PKG_",
    "CARGO_MANIFEST_",
    "CARGO_CRATE_",
    "CARGO_BIN_",
    "CARGO_PRIMARY_PACKAGE",
];

/// `explicit` if given (relative to the working directory), else the
/// freshly built binary of this tool's profile.
pub fn ridepay_binary(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = explicit {
        // Absolute: the binary is run from the temp directory.
        return std::fs::canonicalize(path)
            .with_context(|| format!("no ridepay binary at {}", path.display()));
    }
    let exe = std::env::current_exe().context("cannot locate this tool")?;
    let target_profile = exe
        .parent()
        .context("this tool has no parent folder")?
        .to_owned();
    let profile = target_profile
        .file_name()
        .and_then(|name| name.to_str())
        .context("cannot tell the build profile")?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    // `cargo run` hands this tool its package's CARGO_PKG_* and friends; build
    // scripts that watch such variables (ring's) would see them change and
    // rebuild on every switch between this build and a build from a shell.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if INHERITED_FROM_CARGO_RUN
            .iter()
            .any(|prefix| name.starts_with(prefix))
        {
            build.env_remove(name.as_ref());
        }
    }
    build
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(["build", "--quiet", "-p", "ridepay", "--bin", "ridepay"]);
    match profile {
        "debug" => {}
        "release" => {
            build.arg("--release");
        }
        other => {
            build.args(["--profile", other]);
        }
    }
    eprintln!("building ridepay ({profile} profile)");
    let status = build.status().context("cannot run cargo build")?;
    if !status.success() {
        bail!("cargo build -p ridepay failed ({status})");
    }
    Ok(target_profile.join("ridepay"))
}
