//! The engine lost under load: killed, or frozen with SIGSTOP, while clients search. `/healthz`
//! must say so within 2 s, every call must answer within its deadline (`backend_failure`, not a
//! hang), the server must stay up, and service must come back within 5 s of the engine.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;

use crate::common::{Mcp, try_get};
use crate::own_engine::{BIN, Up, gone};

/// One call of the load: when it began, how long it took, and what it got.
#[derive(Debug, Clone)]
struct Answered {
    at: Instant,
    took: Duration,
    outcome: String,
}

/// Searches from `clients` tasks until stopped; every answer is recorded.
struct Load {
    stop: Arc<std::sync::atomic::AtomicBool>,
    answers: Arc<Mutex<Vec<Answered>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    async fn start(mcp_url: &str, clients: usize) -> Self {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let answers = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..clients {
            let mut client = Mcp::modern(mcp_url, None).await;
            let (stop, answers) = (stop.clone(), answers.clone());
            tasks.push(tokio::spawn(async move {
                let queries = ["healthz", "build cache", "vite error", "clickhouse down"];
                let mut n = i;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n += 1;
                    let at = Instant::now();
                    let reply = client
                        .call_raw(
                            "search_sessions",
                            json!({"query": queries[n % queries.len()]}),
                        )
                        .await;
                    let outcome = reply.tool_outcome();
                    answers.lock().unwrap().push(Answered {
                        at,
                        took: at.elapsed(),
                        outcome,
                    });
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }));
        }
        Self {
            stop,
            answers,
            tasks,
        }
    }

    fn since(&self, from: Instant) -> Vec<Answered> {
        self.answers
            .lock()
            .unwrap()
            .iter()
            .filter(|a| a.at >= from)
            .cloned()
            .collect()
    }

    async fn stop(self) -> Vec<Answered> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for task in self.tasks {
            task.await.unwrap();
        }
        Arc::try_unwrap(self.answers).unwrap().into_inner().unwrap()
    }
}

/// How long until `check` holds, polling every 50 ms, up to `within`.
async fn until<F, Fut>(within: Duration, mut check: F) -> Option<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while started.elapsed() < within {
        if check().await {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// The fixtures in the `up`'s engine, so searches have something to find.
fn load_fixtures(up: &Up) {
    let output = std::process::Command::new(BIN)
        .args(["ingest", "--no-progress"])
        .arg(crate::common::fixtures())
        .env("MORAINE_MCP_CLICKHOUSE__URL", &up.engine_url)
        .env("HOME", &up.dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The outage: from the fault until service is back, checked against the deadlines.
async fn outage(up: &mut Up, fault: Signal) -> String {
    let mcp_url = format!("{}/mcp", up.base);
    let health = format!("{}/healthz", up.base);
    let load = Load::start(&mcp_url, 4).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let engine = up.engine();
    let fault_at = Instant::now();
    kill(Pid::from_raw(engine as i32), fault).unwrap();
    let to_503 = until(Duration::from_secs(10), || async {
        try_get(&health).await == Some(503)
    })
    .await
    .expect("/healthz never said the engine is gone");
    // The engine comes back: started again by `up` after a kill, woken after a stop.
    let back_at = if fault == Signal::SIGSTOP {
        tokio::time::sleep(Duration::from_secs(6)).await;
        kill(Pid::from_raw(engine as i32), Signal::SIGCONT).unwrap();
        Instant::now()
    } else {
        assert!(gone(engine, Duration::from_secs(5)).await);
        let ping = format!("{}/ping", up.engine_url);
        until(Duration::from_secs(60), || async {
            try_get(&ping).await == Some(200)
        })
        .await
        .expect("the engine did not come back");
        Instant::now()
    };
    let to_recovery = until(Duration::from_secs(30), || {
        let load = &load;
        async move {
            load.since(back_at)
                .iter()
                .any(|a| a.outcome == "ok" && a.at > back_at)
        }
    })
    .await
    .expect("service did not come back");
    assert_eq!(try_get(&health).await, Some(200));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let answers = load.stop().await;
    assert!(
        up.child.try_wait().unwrap().is_none(),
        "the server went down"
    );
    let during: Vec<&Answered> = answers
        .iter()
        .filter(|a| a.at >= fault_at && a.at < back_at)
        .collect();
    let deadline = Duration::from_secs(5);
    let slowest = during.iter().map(|a| a.took).max().unwrap_or_default();
    let mut outcomes: std::collections::BTreeMap<&str, usize> = Default::default();
    for answer in &during {
        *outcomes.entry(answer.outcome.as_str()).or_default() += 1;
    }
    assert!(
        slowest <= deadline + Duration::from_millis(500),
        "{fault:?}: a call took {slowest:?} during the outage"
    );
    // A call waiting for a running one when the engine froze is told `busy` once its queue
    // wait is over: retryable, like `backend_failure`.
    assert!(
        during
            .iter()
            .all(|a| matches!(a.outcome.as_str(), "ok" | "backend_failure" | "busy")),
        "{fault:?}: {outcomes:?}"
    );
    assert!(
        outcomes.get("backend_failure").copied().unwrap_or(0) > 0,
        "{outcomes:?}"
    );
    assert!(
        to_503 <= Duration::from_secs(2),
        "{fault:?}: /healthz said 503 after {to_503:?}"
    );
    assert!(
        to_recovery <= Duration::from_secs(5),
        "{fault:?}: service came back {to_recovery:?} after the engine"
    );
    format!(
        "{fault:?}: /healthz 503 after {} ms; {} calls during the outage {outcomes:?}, slowest {} ms; served again {} ms after the engine was back",
        to_503.as_millis(),
        during.len(),
        slowest.as_millis(),
        to_recovery.as_millis()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_killed_or_frozen_under_load_fails_fast_and_recovers() {
    let mut up = Up::start("engine-loss").await;
    load_fixtures(&up);
    let killed = outage(&mut up, Signal::SIGKILL).await;
    let frozen = outage(&mut up, Signal::SIGSTOP).await;
    eprintln!("engine loss: {killed}\nengine loss: {frozen}");
}
