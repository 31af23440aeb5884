//! Overload: four times more concurrent callers than query slots, for a minute. The excess must
//! be answered `busy` within the queue wait, nothing else may fail, and the service must answer
//! normally the moment the load stops. The admitted calls' latency is reported beside an
//! unloaded run's (measured, not asserted: tests do not judge wall-clock speed).
//!
//! `MORAINE_OVERLOAD_SECS` sets how long the overload lasts (60 s by default).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use moraine_mcp::db::Db;
use moraine_mcp::metrics::Metrics;
use serde_json::json;

use crate::common::{Mcp, TestServer, fixtures, fresh_db, ingest_paths};

const QUERIES: &[&str] = &[
    "healthz",
    "build cache",
    "vite error",
    "clickhouse down",
    "session",
];

/// One search: its latency and what it got (`ok` or the error code).
async fn search(client: &mut Mcp, n: usize) -> (Duration, String) {
    let started = Instant::now();
    let reply = client
        .call_raw(
            "search_sessions",
            json!({"query": QUERIES[n % QUERIES.len()]}),
        )
        .await;
    let outcome = reply.tool_outcome();
    (started.elapsed(), outcome)
}

/// The `q`-quantile of `samples` (nearest rank).
fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort_unstable();
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    samples[rank - 1]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_times_more_callers_than_slots_get_busy_quickly_and_nothing_else() {
    let seconds: u64 = std::env::var("MORAINE_OVERLOAD_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let (mut config, _) = fresh_db().await;
    let slots = 2;
    config.clickhouse.max_concurrent_queries = slots;
    // Every call beyond those running is refused at once.
    config.clickhouse.max_waiting_calls = 0;
    config.clickhouse.queue_timeout_ms = 250;
    let queue_wait = Duration::from_millis(config.clickhouse.queue_timeout_ms);
    let db = Db::new(&config.clickhouse, Metrics::new(&config.sla));
    ingest_paths(&config, &db, &fixtures()).await;
    let server = TestServer::start(config, db).await;

    // Unloaded: one caller at a time.
    let mut client = Mcp::modern(&server.mcp_url, None).await;
    let mut unloaded = Vec::new();
    for n in 0..200 {
        let (took, outcome) = search(&mut client, n).await;
        assert_eq!(outcome, "ok");
        unloaded.push(took);
    }

    // Overloaded: four callers per slot, each calling again as soon as it is answered.
    let callers = 4 * slots;
    let until = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for caller in 0..callers {
        let mut client = Mcp::modern(&server.mcp_url, None).await;
        tasks.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            let mut n = caller;
            while Instant::now() < until {
                let answer = search(&mut client, n).await;
                // A client told busy backs off a little before it asks again.
                if answer.1 == "busy" {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                answers.push(answer);
                n += callers;
            }
            answers
        }));
    }
    let mut admitted = Vec::new();
    let mut busy = Vec::new();
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for task in tasks {
        for (took, outcome) in task.await.unwrap() {
            *outcomes.entry(outcome.clone()).or_default() += 1;
            match outcome.as_str() {
                "ok" => admitted.push(took),
                "busy" => busy.push(took),
                _ => {}
            }
        }
    }
    // The moment the load stops, a call is served.
    let (_, right_after) = search(&mut client, 0).await;

    let unloaded_p50 = quantile(&mut unloaded, 0.5);
    let unloaded_p99 = quantile(&mut unloaded, 0.99);
    let admitted_p50 = quantile(&mut admitted, 0.5);
    let admitted_p99 = quantile(&mut admitted, 0.99);
    let busy_max = busy.iter().max().copied().unwrap_or_default();
    eprintln!(
        "overload: {callers} callers on {slots} slots for {seconds} s: {outcomes:?}; admitted P50 {:.1} ms, P99 {:.1} ms \
         (unloaded P50 {:.1} ms, P99 {:.1} ms: P99 ratio {:.2}); busy answered within {} ms (queue wait {} ms)",
        admitted_p50.as_secs_f64() * 1e3,
        admitted_p99.as_secs_f64() * 1e3,
        unloaded_p50.as_secs_f64() * 1e3,
        unloaded_p99.as_secs_f64() * 1e3,
        admitted_p99.as_secs_f64() / unloaded_p99.as_secs_f64(),
        busy_max.as_millis(),
        queue_wait.as_millis(),
    );
    assert!(
        outcomes.keys().all(|o| o == "ok" || o == "busy"),
        "errors other than busy: {outcomes:?}"
    );
    assert!(!busy.is_empty() && !admitted.is_empty(), "{outcomes:?}");
    // Busy comes after the queue wait, not after a query's time.
    assert!(
        busy_max < queue_wait + Duration::from_secs(2),
        "a busy answer took {busy_max:?}"
    );
    assert_eq!(right_after, "ok", "not served right after the load");
    server.stop().await;
}
