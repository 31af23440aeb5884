//! The embedded ClickHouse: the chdb-core engine behind a small HTTP gateway, in a Python
//! virtual environment this module creates on first use.
//!
//! The gateway script and its hash-pinned requirements are compiled into the binary, so a
//! single `moraine-mcp` binary can bring up its own database on a machine with only Python.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const GATEWAY_SCRIPT: &str = include_str!("../deploy/embedded/chgateway.py");
const REQUIREMENTS: &str = include_str!("../deploy/embedded/requirements.txt");

/// How long the engine may take to start listening (it loads a large shared library).
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a stopping engine may take to flush before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{action}: {source}")]
    Io {
        action: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Setup(String),
    #[error("the embedded ClickHouse did not start: {0}")]
    Start(String),
}

fn io(action: impl Into<String>) -> impl FnOnce(std::io::Error) -> EngineError {
    let action = action.into();
    move |source| EngineError::Io { action, source }
}

/// A Python environment able to run the gateway.
#[derive(Debug, Clone)]
pub struct Environment {
    python: PathBuf,
    script: PathBuf,
}

impl Environment {
    /// Creates (once) a virtual environment under `dir` with the pinned requirements, and writes
    /// the gateway script there. A marker records the requirements it was built from, so a new
    /// binary with new pins rebuilds it. Concurrent callers wait on a lock file.
    pub fn ensure(dir: &Path, python: &str) -> Result<Self, EngineError> {
        std::fs::create_dir_all(dir).map_err(io(format!("create {}", dir.display())))?;
        let lock_path = dir.join(".lock");
        let lock = std::fs::File::create(&lock_path)
            .map_err(io(format!("create {}", lock_path.display())))?;
        lock.lock().map_err(io("lock the engine directory"))?;

        let venv = dir.join("venv");
        let venv_python = venv.join("bin").join("python");
        let marker = venv.join(".moraine-requirements");
        let wanted = crate::migrate::sha256_hex(REQUIREMENTS);
        let current = std::fs::read_to_string(&marker).unwrap_or_default();
        if current.trim() != wanted || !venv_python.exists() {
            eprintln!(
                "setting up the embedded ClickHouse in {} (first run only: pip downloads about \
                 270 MB from PyPI, about 900 MB on disk; its progress follows)",
                venv.display()
            );
            check_python(python)?;
            if venv.exists() {
                std::fs::remove_dir_all(&venv).map_err(io(format!("remove {}", venv.display())))?;
            }
            run(
                Command::new(python).args(["-m", "venv"]).arg(&venv),
                &format!("create a virtual environment with {python}"),
            )?;
            let requirements = dir.join("requirements.txt");
            std::fs::write(&requirements, REQUIREMENTS)
                .map_err(io(format!("write {}", requirements.display())))?;
            // pip's own output goes to our stderr, so a slow download shows as progress
            // rather than as a hang.
            let status = Command::new(&venv_python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "--no-input",
                    "--require-hashes",
                    "-r",
                ])
                .arg(&requirements)
                .stdin(Stdio::null())
                .stdout(std::io::stderr())
                .status()
                .map_err(|e| EngineError::Setup(format!("cannot run pip: {e}")))?;
            if !status.success() {
                return Err(EngineError::Setup(format!(
                    "cannot install the embedded ClickHouse (chdb-core) from PyPI ({status}); \
                     pip's output above says why"
                )));
            }
            std::fs::write(&marker, &wanted).map_err(io(format!("write {}", marker.display())))?;
        }
        let script = dir.join("chgateway.py");
        if std::fs::read_to_string(&script).ok().as_deref() != Some(GATEWAY_SCRIPT) {
            std::fs::write(&script, GATEWAY_SCRIPT)
                .map_err(io(format!("write {}", script.display())))?;
        }
        drop(lock);
        Ok(Self {
            python: venv_python,
            script,
        })
    }

    /// The environment's Python (with the engine's packages installed).
    pub fn python(&self) -> &Path {
        &self.python
    }
}

/// A running embedded ClickHouse. Stopped (gracefully, then forcibly) on drop.
pub struct Engine {
    child: Option<Child>,
    pub port: u16,
    log_path: PathBuf,
    /// What it was started with, to start it again.
    env: Environment,
    data_dir: PathBuf,
}

impl Engine {
    /// Starts the gateway on 127.0.0.1:`port` (0 picks a free port) over the database in
    /// `data_dir`, and waits until it listens. Its log goes to `log_path`.
    pub fn start(
        env: &Environment,
        data_dir: &Path,
        port: u16,
        log_path: &Path,
    ) -> Result<Self, EngineError> {
        std::fs::create_dir_all(data_dir).map_err(io(format!("create {}", data_dir.display())))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_path)
            .map_err(io(format!("open {}", log_path.display())))?;
        let mut child = Command::new(&env.python)
            .arg(&env.script)
            .arg("--path")
            .arg(data_dir)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            // If this process dies without stopping the engine, the engine stops itself.
            .arg("--exit-with-parent")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(io(format!("start {}", env.python.display())))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = lines.next();
            let _ = tx.send(first);
            // Keep draining so the gateway never blocks on a full pipe.
            for _ in lines {}
        });
        let mut engine = Self {
            child: Some(child),
            port,
            log_path: log_path.to_owned(),
            env: env.clone(),
            data_dir: data_dir.to_owned(),
        };
        let line = match rx.recv_timeout(START_TIMEOUT) {
            Ok(Some(Ok(line))) => line,
            Ok(_) => return Err(EngineError::Start(engine.exit_report())),
            Err(_) => {
                return Err(EngineError::Start(format!(
                    "no answer within {START_TIMEOUT:?}; {}",
                    engine.exit_report()
                )));
            }
        };
        let port = line
            .strip_prefix("listening 127.0.0.1:")
            .and_then(|p| p.trim().parse().ok())
            .ok_or_else(|| EngineError::Start(format!("unexpected first line {line:?}")))?;
        engine.port = port;
        Ok(engine)
    }

    /// The engine's exit status, if it has exited (which also reaps it).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// Starts the engine again, on the same port and data, after it exited.
    pub fn restart(&mut self) -> Result<(), EngineError> {
        self.stop();
        let fresh = Self::start(&self.env, &self.data_dir, self.port, &self.log_path)?;
        *self = fresh;
        Ok(())
    }

    /// The engine's HTTP URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Stops the engine: SIGTERM, then SIGKILL if it has not exited in time.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let give_up = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < give_up {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Why the engine is not running: its exit status and the end of its log.
    fn exit_report(&mut self) -> String {
        let status = self
            .child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
            .map_or_else(|| "still running".to_owned(), |s| s.to_string());
        self.stop();
        let mut log = String::new();
        if let Ok(mut file) = std::fs::File::open(&self.log_path) {
            let _ = file.read_to_string(&mut log);
        }
        let tail: Vec<&str> = log.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!(
            "exit status {status}; log {}:\n{}",
            self.log_path.display(),
            tail.join("\n")
        )
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The pinned wheels exist for CPython 3.11 to 3.14 only; say so before pip fails obscurely.
fn check_python(python: &str) -> Result<(), EngineError> {
    let output = Command::new(python)
        .args(["-c", "import sys; print(sys.version_info[0], sys.version_info[1])"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            EngineError::Setup(format!(
                "the embedded ClickHouse needs Python 3.11 to 3.14, and `{python}` cannot run ({e}); \
                 install one or set embedded.python"
            ))
        })?;
    let version = String::from_utf8_lossy(&output.stdout);
    let mut parts = version.split_whitespace().map(str::parse::<u32>);
    match (parts.next(), parts.next()) {
        (Some(Ok(3)), Some(Ok(minor))) if (11..=14).contains(&minor) => Ok(()),
        _ => Err(EngineError::Setup(format!(
            "the embedded ClickHouse needs Python 3.11 to 3.14; `{python}` is {}; \
             install one or set embedded.python",
            version.trim().replace(' ', ".")
        ))),
    }
}

/// Runs a setup command, showing its output only when it fails.
fn run(command: &mut Command, what: &str) -> Result<(), EngineError> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| EngineError::Setup(format!("cannot {what}: {e}")))?;
    if output.status.success() {
        return Ok(());
    }
    let mut detail = String::from_utf8_lossy(&output.stderr).into_owned();
    if detail.trim().is_empty() {
        detail = String::from_utf8_lossy(&output.stdout).into_owned();
    }
    Err(EngineError::Setup(format!(
        "cannot {what} ({}):\n{}",
        output.status,
        detail.trim()
    )))
}
