//! Start and stop: `up` keeps its embedded engine alive (a killed engine is reaped and started
//! again) and leaves no engine process behind however it is stopped.

use std::process::Command;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::own_engine::{BIN, Up, alive, children, free_port, gone};

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
    // `healthcheck` with no URL checks the running `up`, wherever it listens.
    let health = Command::new(BIN)
        .arg("healthcheck")
        .env("HOME", &up.dir)
        .env("MORAINE_MCP_EMBEDDED__DATA_DIR", &up.dir)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&health.stderr);
    assert!(health.status.success(), "{said}");
    assert!(said.contains("checking the running"), "{said}");
    assert!(
        String::from_utf8_lossy(&health.stdout).starts_with("200 "),
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

/// SIGTERM at any moment of `serve`'s start — waiting for ClickHouse, binding, serving — ends
/// it with exit 0, never by the signal's default action.
#[tokio::test]
async fn serve_stopped_at_any_moment_exits_cleanly() {
    let (config, _db) = crate::common::fresh_db().await;
    let unreachable = format!("http://127.0.0.1:{}", free_port());
    let mut cases: Vec<(&str, u64)> = [30, 80, 150, 300, 600, 1200, 2500]
        .into_iter()
        .map(|delay| (config.clickhouse.url.as_str(), delay))
        .collect();
    // Still waiting for a ClickHouse that is not there.
    cases.push((unreachable.as_str(), 700));
    for (url, delay) in cases {
        let mut child = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("MORAINE_MCP_CLICKHOUSE__URL", url)
            .env(
                "MORAINE_MCP_CLICKHOUSE__DATABASE",
                &config.clickhouse.database,
            )
            .env("MORAINE_MCP_CLICKHOUSE__STARTUP_WAIT_SECS", "60")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(delay)).await;
        kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "SIGTERM after {delay} ms did not stop serve"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert!(
            status.success(),
            "SIGTERM after {delay} ms ({url}): {status}"
        );
    }
}
