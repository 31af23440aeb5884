//! Start and stop: `up` keeps its embedded engine alive (a killed engine is reaped and started
//! again) and leaves no engine process behind however it is stopped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::common::{environment, try_get};

const BIN: &str = env!("CARGO_BIN_EXE_moraine-mcp");

/// A free loopback port (the listener is dropped; the port stays free long enough).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The processes whose parent is `parent`.
fn children(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| stat(*pid).is_some_and(|(_, ppid)| ppid == parent))
        .collect()
}

/// (state, parent) of a process, from `/proc/<pid>/stat`.
fn stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != 'Z')
}

/// `up` on a fresh data directory that shares the tests' engine installation.
struct Up {
    child: Child,
    base: String,
    dir: PathBuf,
}

impl Up {
    async fn start(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("moraine-up-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // The engine's Python environment is installed once for all tests.
        let shared = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("engine-env");
        let _ = environment();
        std::os::unix::fs::symlink(&shared, dir.join("engine")).unwrap();
        let port = free_port();
        let child = Command::new(BIN)
            .args([
                "up",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--no-ingest",
            ])
            .arg("--data-dir")
            .arg(&dir)
            .args(["--engine-port", &free_port().to_string()])
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
        };
        up.wait_healthy(Duration::from_secs(120)).await;
        up
    }

    async fn wait_healthy(&self, within: Duration) {
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

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("up.log")).unwrap_or_default()
    }

    fn engine(&self) -> u32 {
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
async fn gone(pid: u32, within: Duration) -> bool {
    let started = Instant::now();
    while alive(pid) {
        if started.elapsed() > within {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}

#[tokio::test]
async fn up_restarts_a_killed_engine_and_reaps_it() {
    let mut up = Up::start("restart").await;
    let first = up.engine();
    kill(Pid::from_raw(first as i32), Signal::SIGKILL).unwrap();
    assert!(gone(first, Duration::from_secs(5)).await);
    up.wait_healthy(Duration::from_secs(60)).await;
    // The killed engine was reaped: no zombie child remains, and a new engine runs.
    let now: Vec<u32> = children(up.child.id());
    assert!(
        !now.contains(&first),
        "the killed engine is still a child: {now:?}"
    );
    assert!(now.iter().all(|pid| alive(*pid)), "a zombie child remains");
    let second = up.engine();
    assert_ne!(first, second);
    kill(Pid::from_raw(up.child.id() as i32), Signal::SIGTERM).unwrap();
    let status = up.child.wait().unwrap();
    assert!(status.success(), "{status}\n{}", up.log());
    assert!(
        gone(second, Duration::from_secs(20)).await,
        "the engine outlived up"
    );
}

/// However `up` is stopped — SIGINT, SIGTERM, SIGKILL — its engine does not outlive it.
#[tokio::test]
async fn no_engine_outlives_up() {
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGKILL] {
        let mut up = Up::start(&format!("{signal:?}")).await;
        let engine = up.engine();
        kill(Pid::from_raw(up.child.id() as i32), signal).unwrap();
        let status = up.child.wait().unwrap();
        if signal != Signal::SIGKILL {
            assert!(status.success(), "{signal:?}: {status}\n{}", up.log());
        }
        assert!(
            gone(engine, Duration::from_secs(30)).await,
            "{signal:?}: the engine outlived up"
        );
    }
}

#[tokio::test]
async fn a_second_up_says_what_is_wrong_and_commands_beside_up_find_its_engine() {
    let up = Up::start("beside").await;
    let second = Command::new(BIN)
        .args([
            "up",
            "--listen",
            &format!("127.0.0.1:{}", free_port()),
            "--no-ingest",
        ])
        .arg("--data-dir")
        .arg(&up.dir)
        .args(["--engine-port", &free_port().to_string()])
        .env("HOME", &up.dir)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{said}");
    assert!(
        said.contains("already running") && said.contains(&format!("pid {}", up.child.id())),
        "{said}"
    );
    // `ingest` with nothing naming a ClickHouse uses the running `up`'s engine.
    let ingest = Command::new(BIN)
        .arg("ingest")
        .arg(crate::common::fixtures())
        .arg("--no-progress")
        .env("HOME", &up.dir)
        .env("MORAINE_MCP_EMBEDDED__DATA_DIR", &up.dir)
        .env_remove("MORAINE_MCP_CLICKHOUSE__URL")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&ingest.stderr);
    assert!(ingest.status.success(), "{said}");
    assert!(
        said.contains("using the embedded ClickHouse of the running"),
        "{said}"
    );
    let mut client = crate::common::Mcp::legacy(&format!("{}/mcp", up.base), None).await;
    let found = client
        .ok("search_sessions", serde_json::json!({"query": "healthz"}))
        .await;
    assert!(!found["data"]["results"].as_array().unwrap().is_empty());
    // The server said at start whether tokens are required.
    assert!(up.log().contains("authentication is off"), "{}", up.log());
    // Its log went to a file: no terminal colour codes in it.
    assert!(!up.log().contains('\u{1b}'), "{}", up.log());
}
