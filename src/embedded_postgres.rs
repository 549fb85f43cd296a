//! A private PostgreSQL cluster run from the installed server binaries, so that
//! `cargo run` and `cargo test` need no database set up by hand.
//!
//! Layout of the data folder (`RIDEPAY_DATA_DIR`):
//! - `cluster.json`: where the cluster lives, its socket, and the passwords of
//!   its superuser and of the service's role (0600);
//! - `postgres/`: the cluster itself, unless the server user cannot reach the
//!   data folder, in which case it lives in a folder made fresh, under a
//!   random name, in the system temp directory (see `private_folders::cluster_root`).
//!
//! As root the server runs as the unprivileged `postgres` user, because
//! PostgreSQL refuses to run as root.
//!
//! The cluster listens on a Unix socket only, in a 0700 folder of its own:
//! nobody else can bind there, so a password is only ever sent to this
//! cluster (a TCP port can be taken by anyone once the server is gone). It
//! is attached to only while the postmaster its `postmaster.pid` names is
//! alive and works in this data folder. The service connects as `ridepay`,
//! an ordinary role that owns the `ridepay` database; the superuser's
//! password serves only to set that role up.

mod cluster;
mod private_folders;
mod service_role;

pub use cluster::{find_bin_dir, EmbeddedPostgres, StopMode};
pub use service_role::connect_with_retry;
