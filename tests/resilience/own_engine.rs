//! A service of its own for tests that stop, kill or freeze its engine: `up` on a fresh data
//! directory sharing the tests' engine installation, and the process helpers that watch it.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{environment, try_get};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_moraine-mcp");

/// A free loopback port for a process the test starts. Drawn below Linux's ephemeral range
/// (32768–60999), so that no outgoing connection of a parallel test takes it between this
/// check and the process's bind, as a port from `bind(0)` could be.
pub(crate) fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    static DRAWS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    loop {
        let draw = DRAWS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let port =
            20_000 + (RandomState::new().hash_one((std::process::id(), draw)) % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// The processes whose parent is `parent`.
pub(crate) fn children(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| stat(*pid).is_some_and(|(_, ppid)| ppid == parent))
        .collect()
}

/// (state, parent) of a process, from `/proc/<pid>/stat`.
pub(crate) fn stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

pub(crate) fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != 'Z')
}

/// `up` on a fresh data directory that shares the tests' engine installation.
pub(crate) struct Up {
    pub(crate) child: Child,
    pub(crate) base: String,
    pub(crate) dir: PathBuf,
    /// The engine's ClickHouse HTTP endpoint.
    pub(crate) engine_url: String,
}

impl Up {
    pub(crate) async fn start(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("moraine-up-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // The engine's Python environment is installed once for all tests.
        let shared = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("engine-env");
        let _ = environment();
        std::os::unix::fs::symlink(&shared, dir.join("engine")).unwrap();
        let port = free_port();
        let engine_port = free_port();
        let child = Command::new(BIN)
            .args([
                "up",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--no-ingest",
            ])
            .arg("--data-dir")
            .arg(&dir)
            .args(["--engine-port", &engine_port.to_string()])
            .env("HOME", &dir)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("up.log")).unwrap())
            .spawn()
            .unwrap();
        let up = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            dir,
            engine_url: format!("http://127.0.0.1:{engine_port}"),
        };
        up.wait_healthy(Duration::from_secs(120)).await;
        up
    }

    pub(crate) async fn wait_healthy(&self, within: Duration) {
        let started = Instant::now();
        loop {
            let healthy = try_get(&format!("{}/healthz", self.base)).await == Some(200);
            if healthy {
                return;
            }
            assert!(
                started.elapsed() < within,
                "not healthy within {within:?}; log:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("up.log")).unwrap_or_default()
    }

    /// The last `lines` lines the engine logged.
    pub(crate) fn engine_log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(self.dir.join("engine.log")).unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    pub(crate) fn engine(&self) -> u32 {
        let engines = children(self.child.id());
        assert_eq!(engines.len(), 1, "one engine process: {engines:?}");
        engines[0]
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Waits until `pid` is gone (or a zombie nobody reaps), within `within`.
pub(crate) async fn gone(pid: u32, within: Duration) -> bool {
    let started = Instant::now();
    while alive(pid) {
        if started.elapsed() > within {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}
