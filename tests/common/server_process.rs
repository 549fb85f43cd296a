//! The built `ridepay` binary as a child process, for tests that kill it.
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Runs `ridepay <args>` on `database_url` to its end, with `env` and no
/// developer's `.env` (nor its log).
pub fn run(database_url: &str, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ridepay"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .env_clear()
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "off")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// Runs `ridepay <args>` with nothing but `env`, for what it refuses:
/// whether it succeeded, and what it said on stderr.
pub fn run_refused(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ridepay"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `run`, which must succeed, and what it printed, read as one JSON value.
pub fn run_json(database_url: &str, args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let output = run(database_url, args, env);
    assert!(
        output.status.success(),
        "ridepay {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

pub struct ServerProcess {
    child: Child,
    pub address: String,
    /// What it printed on stdout after the address.
    printed: Arc<Mutex<Vec<String>>>,
}

impl ServerProcess {
    /// Starts `ridepay serve` on a free port with a short lease, workers off
    /// unless `env` switches them on, and waits until it listens.
    /// Its log and what it prints before a crash point aborts it go nowhere,
    /// unless `RIDEPAY_TEST_SERVER_LOG` asks for them.
    pub fn start(database_url: &str, env: &[(&str, &str)]) -> ServerProcess {
        let stderr = if std::env::var_os("RIDEPAY_TEST_SERVER_LOG").is_some() {
            Stdio::inherit()
        } else {
            Stdio::null()
        };
        Self::start_with_stderr(database_url, env, stderr)
    }

    /// Like `start`, with the server's log (stderr) going to `log`.
    pub fn start_logged(
        database_url: &str,
        env: &[(&str, &str)],
        log: &std::path::Path,
    ) -> ServerProcess {
        Self::start_with_stderr(
            database_url,
            env,
            std::fs::File::create(log).unwrap().into(),
        )
    }

    fn start_with_stderr(database_url: &str, env: &[(&str, &str)], stderr: Stdio) -> ServerProcess {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ridepay"));
        command
            .arg("serve")
            // No developer's .env is read from here.
            .current_dir(std::env::temp_dir())
            .env_clear()
            .env("DATABASE_URL", database_url)
            .env("BIND_ADDR", "127.0.0.1:0")
            .env("HTTP_WORKERS", "2")
            .env("DATABASE_POOL_SIZE", "8")
            .env("IDEMPOTENCY_LEASE_SECS", "2")
            .env("COMPLETER_ENABLED", "false")
            .env("COMPLETER_INTERVAL_SECS", "1")
            .env("OUTBOX_ENABLED", "false")
            .env("OUTBOX_INTERVAL_SECS", "1")
            .env("REAPER_ENABLED", "false")
            .env("RECONCILE_ENABLED", "false")
            // The fault and load tests send far more than a client should.
            .env("RATE_LIMIT_PER_SECOND", "0")
            .env("RATE_LIMIT_ADDRESS_PER_SECOND", "0")
            // Quiet unless asked: the fault tests make the server log a lot.
            .env(
                "RUST_LOG",
                std::env::var("RIDEPAY_TEST_SERVER_LOG").unwrap_or_else(|_| "off".to_owned()),
            )
            .stdout(Stdio::piped())
            .stderr(stderr);
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("start the ridepay binary");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let address = loop {
            let line = lines
                .next()
                .expect("ridepay exited before listening")
                .unwrap();
            if let Some(address) = line.strip_prefix("ridepay listening on ") {
                break address.trim().to_owned();
            }
        };
        // Keep draining stdout so the child never blocks on a full pipe.
        let printed = Arc::new(Mutex::new(Vec::new()));
        let sink = printed.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        ServerProcess {
            child,
            address,
            printed,
        }
    }

    /// The first printed line containing `needle`, waiting up to `limit` for it.
    pub fn printed_line(&self, needle: &str, limit: Duration) -> Option<String> {
        let deadline = Instant::now() + limit;
        loop {
            let found = self
                .printed
                .lock()
                .unwrap()
                .iter()
                .find(|l| l.contains(needle))
                .cloned();
            if found.is_some() || Instant::now() > deadline {
                return found;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the process to end by itself (a crash point, say).
    pub fn wait_for_exit(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "ridepay did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM: the graceful shutdown an orchestrator asks for.
    pub fn terminate(&self) {
        self.signal(nix::sys::signal::Signal::SIGTERM);
    }

    /// Sends `signal` (SIGINT is a Ctrl-C).
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
    }

    /// SIGKILL: no cleanup of any kind.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
