//! The embedded cluster's fallback folder under the system temp directory:
//! another local user who prepares a folder where ridepay might put its
//! cluster gets nothing written into it, and a prepared folder is never
//! taken over.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use ridepay::embedded_postgres::{EmbeddedPostgres, StopMode};

use crate::helpers::skip;
use sha2::{Digest, Sha256};

/// The uid the attacks run as: `nobody`, there on every Debian system.
const STRANGER: u32 = 65534;

/// Root is needed both for the case itself (the fallback is taken only when
/// root's `postgres` user cannot reach the data folder) and to act as another
/// user. CI runs as root; elsewhere the test says it did not run.
fn running_as_root(test: &str) -> bool {
    let root = nix::unistd::Uid::effective().is_root();
    if !root {
        skip(
            test,
            "needs root, to run the cluster as `postgres` and act as another user",
        );
    }
    root
}

/// A data folder that the `postgres` user cannot reach: inside a 0700 folder
/// of root's, as a checkout under root's home is.
fn unreachable_data_dir() -> (PathBuf, PathBuf) {
    let home = std::env::temp_dir().join(format!(
        "ridepay-test-home-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let data_dir = home.join("data");
    std::fs::create_dir(&data_dir).unwrap();
    (home, data_dir)
}

/// Makes `path` as the stranger would: a folder open to all, or a file.
fn as_stranger(path: &Path, folder: bool) {
    if folder {
        std::fs::create_dir(path).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    } else {
        std::fs::write(path, b"").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).unwrap();
    }
    std::os::unix::fs::chown(path, Some(STRANGER), Some(STRANGER)).unwrap();
}

fn cluster_root(data_dir: &Path) -> PathBuf {
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data_dir.join("cluster.json")).unwrap()).unwrap();
    PathBuf::from(record["root"].as_str().unwrap())
}

#[test]
fn a_fallback_folder_prepared_by_another_user_gets_no_password_and_is_not_taken_over() {
    if !running_as_root(
        "a_fallback_folder_prepared_by_another_user_gets_no_password_and_is_not_taken_over",
    ) {
        return;
    }
    let (home, data_dir) = unreachable_data_dir();
    // The name earlier releases computed from the data folder, made first by
    // the stranger, with a password file ready to be written into.
    let digest = hex::encode(Sha256::digest(
        data_dir
            .canonicalize()
            .unwrap()
            .as_os_str()
            .as_encoded_bytes(),
    ));
    let predictable = std::env::temp_dir().join(format!("ridepay-postgres-{}", &digest[..16]));
    as_stranger(&predictable, true);
    as_stranger(&predictable.join("pwfile"), false);

    let cluster = EmbeddedPostgres::ensure_running(&data_dir).expect("the cluster starts");

    let planted = std::fs::read(predictable.join("pwfile")).unwrap();
    let entries: Vec<_> = std::fs::read_dir(&predictable).unwrap().collect();
    let prepared = std::fs::metadata(&predictable).unwrap();
    let root = cluster_root(&data_dir);
    let actual = std::fs::symlink_metadata(&root).unwrap();
    cluster.stop(StopMode::Fast).unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::remove_dir_all(&predictable).unwrap();
    std::fs::remove_dir_all(&home).unwrap();

    assert!(
        planted.is_empty(),
        "the password was written where a stranger can read it"
    );
    assert_eq!(
        entries.len(),
        1,
        "nothing of the cluster's went into the prepared folder"
    );
    assert_eq!((prepared.uid(), prepared.mode() & 0o777), (STRANGER, 0o777));
    assert_ne!(root, predictable);
    assert!(root.starts_with(std::env::temp_dir()), "{}", root.display());
    let postgres = nix::unistd::User::from_name("postgres").unwrap().unwrap();
    assert!(actual.is_dir() && !actual.file_type().is_symlink());
    assert_eq!(
        (actual.uid(), actual.mode() & 0o777),
        (postgres.uid.as_raw(), 0o700)
    );
}

#[test]
fn a_recorded_cluster_folder_that_someone_else_now_owns_is_refused() {
    if !running_as_root("a_recorded_cluster_folder_that_someone_else_now_owns_is_refused") {
        return;
    }
    let (home, data_dir) = unreachable_data_dir();
    let cluster = EmbeddedPostgres::ensure_running(&data_dir).expect("the cluster starts");
    cluster.stop(StopMode::Fast).unwrap();
    // The temp directory was cleared (a reboot), and the stranger made the
    // recorded folder again, a cluster's files and all.
    let root = cluster_root(&data_dir);
    let moved = root.with_extension("moved");
    std::fs::rename(&root, &moved).unwrap();
    as_stranger(&root, true);
    std::fs::create_dir(root.join("data")).unwrap();
    std::fs::write(root.join("data/PG_VERSION"), b"15\n").unwrap();

    let refused = EmbeddedPostgres::ensure_running(&data_dir).unwrap_err();
    let owner = std::fs::metadata(&root).unwrap().uid();
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::remove_dir_all(&moved).unwrap();
    std::fs::remove_dir_all(&home).unwrap();

    assert!(
        format!("{refused:#}").contains("refusing to use"),
        "{refused:#}"
    );
    assert_eq!(owner, STRANGER, "the stranger's folder was not taken over");
}

#[test]
fn a_symlink_where_the_cluster_folder_goes_is_refused_and_its_target_left_alone() {
    if !running_as_root(
        "a_symlink_where_the_cluster_folder_goes_is_refused_and_its_target_left_alone",
    ) {
        return;
    }
    let (home, data_dir) = unreachable_data_dir();
    let target = home.join("elsewhere");
    std::fs::create_dir(&target).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(&target, data_dir.join("postgres")).unwrap();

    let refused = EmbeddedPostgres::ensure_running(&data_dir).unwrap_err();
    let left = std::fs::metadata(&target).unwrap();
    std::fs::remove_dir_all(&home).unwrap();

    assert!(format!("{refused:#}").contains("symlink"), "{refused:#}");
    assert_eq!((left.uid(), left.mode() & 0o777), (0, 0o755));
}
