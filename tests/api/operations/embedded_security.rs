//! The embedded cluster's fallback folder under the system temp directory:
//! another local user who prepares a folder where ridepay might put its
//! cluster gets nothing written into it, and a prepared folder is never
//! taken over.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use ridepay::embedded_postgres::{EmbeddedPostgres, StopMode};

use crate::common::app::skip;
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

/// A cluster of the test's own in a data folder named after `name`, and
/// the folders to remove when done (the data folder, the cluster's, the
/// socket's).
fn own_cluster(name: &str) -> (PathBuf, EmbeddedPostgres, Vec<PathBuf>) {
    let dir = std::env::temp_dir().join(format!("{name}-{}", uuid::Uuid::new_v4().simple()));
    let cluster = EmbeddedPostgres::ensure_running(&dir).expect("the cluster starts");
    let folders = vec![
        dir.clone(),
        cluster_root(&dir),
        cluster.socket_dir().to_owned(),
    ];
    (dir, cluster, folders)
}

fn remove_all(folders: &[PathBuf]) {
    for folder in folders {
        std::fs::remove_dir_all(folder).ok();
    }
}

/// Rewrites `cluster.json` of `dir` as `change` says, as an earlier release
/// or a test's stranger would have left it.
fn rewrite_record(dir: &Path, change: impl FnOnce(&mut serde_json::Value)) {
    let file = dir.join("cluster.json");
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    change(&mut record);
    std::fs::write(&file, serde_json::to_vec(&record).unwrap()).unwrap();
}

/// Waits until no live process works in `data` any more: a SIGKILLed
/// postmaster's children notice its death and leave.
fn wait_until_nothing_works_in(data: &Path) {
    let data = data.canonicalize().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let working = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .any(|entry| std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd == data))
    };
    while working() {
        assert!(
            std::time::Instant::now() < deadline,
            "the killed server's processes are still there"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A listener that asks whoever connects for a cleartext password, as a
/// local user holding the cluster's old port would, and keeps what it gets.
fn password_catcher() -> (u16, std::sync::mpsc::Receiver<Vec<u8>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (caught, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            stream
                .set_read_timeout(Some(std::time::Duration::from_secs(5)))
                .ok();
            // The startup packet: its length, then the rest.
            let mut length = [0u8; 4];
            if stream.read_exact(&mut length).is_err() {
                continue;
            }
            let mut startup = vec![0u8; (u32::from_be_bytes(length) as usize).saturating_sub(4)];
            if stream.read_exact(&mut startup).is_err() {
                continue;
            }
            // An SSL request is refused ('N'); the startup packet follows.
            if startup.len() == 4 && startup == [4, 210, 22, 47] {
                let _ = stream.write_all(b"N");
                let _ = stream.read_exact(&mut length);
                let mut rest = vec![0u8; (u32::from_be_bytes(length) as usize).saturating_sub(4)];
                let _ = stream.read_exact(&mut rest);
            }
            // AuthenticationCleartextPassword, then whatever comes back.
            let _ = stream.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 3]);
            let mut answer = Vec::new();
            let _ = stream.read_to_end(&mut answer);
            let _ = caught.send(answer);
        }
    });
    (port, received)
}

#[test]
fn a_stranger_holding_the_port_after_an_unclean_stop_never_gets_a_password() {
    let (dir, cluster, folders) = own_cluster("ridepay-test-impostor");
    let root = cluster_root(&dir);
    // The postmaster SIGKILLed, its postmaster.pid left behind naming a
    // live process that is not a postmaster (its pid reused).
    let killed = cluster.postmaster_pid().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(killed),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_until_nothing_works_in(&root.join("data"));
    let pid_file = root.join("data/postmaster.pid");
    let left = std::fs::read_to_string(&pid_file).unwrap();
    let reused = left.replacen(&killed.to_string(), &std::process::id().to_string(), 1);
    std::fs::write(&pid_file, reused).unwrap();
    // A stranger listens where the cluster's port is recorded.
    let (port, caught) = password_catcher();
    rewrite_record(&dir, |record| record["port"] = port.into());

    let migrated = std::process::Command::new(env!("CARGO_BIN_EXE_ridepay"))
        .arg("migrate")
        .current_dir(std::env::temp_dir())
        .env_clear()
        .env("RIDEPAY_DATA_DIR", &dir)
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    let sent = caught.recv_timeout(std::time::Duration::from_millis(500));
    if let Ok(Some(running)) = EmbeddedPostgres::running(&dir) {
        running.stop(StopMode::Fast).unwrap();
    }
    remove_all(&folders);

    assert!(migrated.status.success(), "{migrated:?}");
    assert!(
        sent.is_err(),
        "the stranger's port was sent {:?}",
        String::from_utf8_lossy(&sent.unwrap())
    );
}

#[derive(diesel::QueryableByName, Debug, PartialEq)]
struct Role {
    #[diesel(sql_type = diesel::sql_types::Text)]
    name: String,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    superuser: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    creates: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    owns_database: bool,
    #[diesel(sql_type = diesel::sql_types::Text)]
    listens_on: String,
}

fn connected_role(url: &str) -> Role {
    use diesel::RunQueryDsl;
    diesel::sql_query(
        "SELECT r.rolname::text AS name, r.rolsuper AS superuser, \
         r.rolcreatedb OR r.rolcreaterole AS creates, \
         d.datdba = r.oid AS owns_database, \
         current_setting('listen_addresses') AS listens_on \
         FROM pg_roles r, pg_database d \
         WHERE r.rolname = current_user AND d.datname = current_database()",
    )
    .get_result(&mut ridepay::embedded_postgres::connect_with_retry(url).unwrap())
    .unwrap()
}

#[test]
fn the_service_connects_as_an_ordinary_role_that_owns_its_database_over_a_private_socket() {
    // Too long a path for a socket inside it (107 bytes at most).
    let (dir, cluster, folders) =
        own_cluster("ridepay-test-a-data-folder-whose-path-is-too-long-for-a-unix-socket");
    let root = cluster_root(&dir);
    let socket_dir = cluster.socket_dir().to_owned();
    let role = connected_role(&cluster.service_url());
    let folder = std::fs::symlink_metadata(&socket_dir).unwrap();
    cluster.stop(StopMode::Fast).unwrap();
    remove_all(&folders);

    assert_eq!(
        role,
        Role {
            name: "ridepay".to_owned(),
            superuser: false,
            creates: false,
            owns_database: true,
            listens_on: String::new(),
        }
    );
    assert!(!socket_dir.starts_with(&root), "{}", socket_dir.display());
    assert!(socket_dir.as_os_str().len() + ".s.PGSQL.5432".len() < 107);
    let server_user = match nix::unistd::User::from_name("postgres").unwrap() {
        Some(postgres) if nix::unistd::Uid::effective().is_root() => postgres.uid.as_raw(),
        _ => nix::unistd::Uid::effective().as_raw(),
    };
    assert!(folder.is_dir() && !folder.file_type().is_symlink());
    assert_eq!((folder.uid(), folder.mode() & 0o777), (server_user, 0o700));
}

#[test]
fn a_cluster_of_an_earlier_release_moves_to_a_socket_and_hands_its_database_to_the_service_role() {
    use diesel::RunQueryDsl;
    let (dir, cluster, folders) = own_cluster("ridepay-test-upgrade");
    // As an earlier release left it: the database and its tables the
    // superuser's, no service role, a record without the new fields.
    {
        let mut conn =
            ridepay::embedded_postgres::connect_with_retry(&cluster.superuser_url("postgres"))
                .unwrap();
        diesel::sql_query("ALTER DATABASE ridepay OWNER TO postgres")
            .execute(&mut conn)
            .unwrap();
        diesel::sql_query("DROP ROLE ridepay")
            .execute(&mut conn)
            .unwrap();
        let mut old =
            ridepay::embedded_postgres::connect_with_retry(&cluster.superuser_url("ridepay"))
                .unwrap();
        ridepay::db::run_migrations(&mut old).unwrap();
    }
    cluster.stop(StopMode::Fast).unwrap();
    rewrite_record(&dir, |record| {
        let fields = record.as_object_mut().unwrap();
        fields.remove("service_password");
        fields.remove("socket_dir");
    });

    let upgraded = EmbeddedPostgres::ensure_running(&dir).expect("the old cluster starts");
    let role = connected_role(&upgraded.service_url());
    let migrated = ridepay::db::run_migrations(
        &mut ridepay::embedded_postgres::connect_with_retry(&upgraded.service_url()).unwrap(),
    );
    let created = std::process::Command::new(env!("CARGO_BIN_EXE_ridepay"))
        .args(["users", "create", "--email", "upgraded@example.com"])
        .current_dir(std::env::temp_dir())
        .env_clear()
        .env("RIDEPAY_DATA_DIR", &dir)
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    upgraded.stop(StopMode::Fast).unwrap();
    remove_all(&folders);

    assert_eq!((role.name.as_str(), role.owns_database), ("ridepay", true));
    assert!(!role.superuser);
    migrated.expect("the service's role migrates its database");
    assert!(created.status.success(), "{created:?}");
}
