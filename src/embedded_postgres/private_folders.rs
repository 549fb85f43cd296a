//! The cluster's folders and secret files, made so that no other local user
//! can have prepared, read or planted anything in them: private folders
//! (0700, never through a symlink, refused when someone else owns them)
//! and files made new (0600) and renamed into place.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use nix::unistd::{Uid, User};

/// The OS user the server runs as when ridepay runs as root.
pub(super) const SERVER_USER: &str = "postgres";
/// The longest socket path a `sockaddr_un` holds (108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Where the cluster's files go: inside the data folder when the server user
/// can reach it, else a fresh folder under the system temp directory (a
/// checkout under a 0700 home is out of reach for `postgres`).
///
/// The temp directory is everyone's: a name there that anyone can compute
/// could be made in advance by another local user, who would then own the
/// folder our superuser password is written into. So the fallback is made
/// atomically under an unpredictable name (`mkdtemp`), never reused unless
/// [`open_private_dir`] finds it ours, and no symlink is followed on the way.
pub(super) fn cluster_root(data_dir: &Path, run_as: Option<&User>) -> anyhow::Result<PathBuf> {
    let inside = data_dir.join("postgres");
    match fs::DirBuilder::new().mode(0o700).create(&inside) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(err).with_context(|| format!("cannot create {}", inside.display())),
    }
    open_private_dir(&inside, run_as)?;
    if server_user_can_write(&inside, run_as) {
        return Ok(inside);
    }
    fs::remove_dir(&inside).ok();
    let template = std::env::temp_dir().join("ridepay-postgres-XXXXXX");
    let outside = nix::unistd::mkdtemp(&template)
        .with_context(|| format!("cannot make a private folder in {}", template.display()))?;
    eprintln!(
        "note: the `{SERVER_USER}` user cannot reach {}; the embedded cluster lives in {} instead",
        data_dir.display(),
        outside.display()
    );
    open_private_dir(&outside, run_as)?;
    Ok(outside)
}

/// Opens `dir` without following a symlink, checks that it belongs to us or
/// to the server user, and makes it the server user's with mode 0700. Refuses
/// a folder anyone else owns: they could have read or planted files in it.
pub(super) fn open_private_dir(dir: &Path, run_as: Option<&User>) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let handle = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_DIRECTORY | nix::libc::O_NOFOLLOW)
        .open(dir)
        .with_context(|| {
            format!(
                "cannot open {} as a folder (a symlink is refused)",
                dir.display()
            )
        })?;
    let owner = handle.metadata()?.uid();
    let allowed = [
        Some(Uid::effective().as_raw()),
        run_as.map(|user| user.uid.as_raw()),
    ];
    if !allowed.contains(&Some(owner)) {
        bail!(
            "refusing to use {}: it belongs to uid {owner}, not to this user or `{SERVER_USER}`; \
             remove it or set RIDEPAY_DATA_DIR elsewhere",
            dir.display()
        );
    }
    handle.set_permissions(fs::Permissions::from_mode(0o700))?;
    if let Some(user) = run_as {
        std::os::unix::fs::fchown(&handle, Some(user.uid.as_raw()), Some(user.gid.as_raw()))
            .with_context(|| format!("cannot hand {} to {SERVER_USER}", dir.display()))?;
    }
    Ok(())
}

pub(super) fn server_user_can_write(dir: &Path, run_as: Option<&User>) -> bool {
    let Some(user) = run_as else { return true };
    Command::new("/usr/bin/test")
        .arg("-w")
        .arg(dir)
        .current_dir("/")
        .uid(user.uid.as_raw())
        .gid(user.gid.as_raw())
        .status()
        .is_ok_and(|status| status.success())
}

/// Writes a file only its owner may read, made new (never an existing file,
/// never through a symlink), then renamed into place, so a file someone else
/// prepared at `path` is replaced, not written into.
pub(super) fn write_private(
    path: &Path,
    contents: &[u8],
    owner: Option<&User>,
) -> anyhow::Result<()> {
    let staging = path.with_extension("new");
    fs::remove_file(&staging).ok();
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&staging)
        .with_context(|| format!("cannot write {}", staging.display()))?;
    if let Some(user) = owner {
        std::os::unix::fs::fchown(&file, Some(user.uid.as_raw()), Some(user.gid.as_raw()))?;
    }
    file.write_all(contents)?;
    file.sync_all()?;
    fs::rename(&staging, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Where the socket goes: the cluster's own private folder when the
/// socket's path fits in a `sockaddr_un`, else a short private folder under
/// the temp directory, the recorded one while it is still ours, else one
/// made fresh under an unpredictable name.
pub(super) fn socket_dir(
    root: &Path,
    recorded: Option<&Path>,
    port: u16,
    run_as: Option<&User>,
) -> anyhow::Result<PathBuf> {
    let fits =
        |dir: &Path| dir.join(format!(".s.PGSQL.{port}")).as_os_str().len() <= MAX_SOCKET_PATH;
    if fits(root) {
        return Ok(root.to_owned());
    }
    if let Some(recorded) = recorded.filter(|dir| fits(dir)) {
        if open_private_dir(recorded, run_as).is_ok() {
            return Ok(recorded.to_owned());
        }
    }
    for base in [std::env::temp_dir(), PathBuf::from("/tmp")] {
        let template = base.join("ridepay-pg-XXXXXX");
        if fits(&template) {
            let dir = nix::unistd::mkdtemp(&template)
                .with_context(|| format!("cannot make a private folder in {}", base.display()))?;
            open_private_dir(&dir, run_as)?;
            return Ok(dir);
        }
    }
    bail!("no folder has a path short enough for the cluster's socket; set TMPDIR to a short one")
}
