//! `/healthz` following the engine, and `/metrics`: the store's size, the room left and the SLA
//! histograms.

use super::*;

#[tokio::test]
async fn healthz_follows_the_engine_without_a_restart() {
    let dir = common::engine_dir("health");
    let engine_db = dir.join("db");
    let log = dir.join("engine.log");
    let mut engine = Engine::start(&common::environment(), &engine_db, 0, &log).unwrap();
    let port = engine.port;
    let mut config = config_for(&engine.url());
    config.clickhouse.health_timeout_ms = 1500;
    let db = Db::new(&config.clickhouse, Metrics::new(&config.sla));
    db.wait_until_ready(Duration::from_secs(30)).await.unwrap();
    let server = TestServer::start(config.clone(), db.clone()).await;
    let health = format!("{}/healthz", server.base);

    // Up but not migrated: 503 with the reason.
    let reply = send("GET", &health, &[], "").await;
    assert_eq!(reply.status, 503, "{reply:?}");
    assert_eq!(reply.json()["clickhouse"], "up");
    migrate::migrate(&config.clickhouse, &db).await.unwrap();
    let reply = send("GET", &health, &[], "").await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let body = reply.json();
    assert_eq!(body["status"], "ok");
    assert_eq!(body["schema_version"], migrate::latest_version());
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));

    tokio::task::spawn_blocking(move || {
        engine.stop();
        engine
    })
    .await
    .unwrap();
    let started = Instant::now();
    let reply = send("GET", &health, &[], "").await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "health must not hang"
    );
    assert_eq!(reply.status, 503, "{reply:?}");
    assert_eq!(reply.json()["clickhouse"], "down");

    let restarted = tokio::task::spawn_blocking(move || {
        Engine::start(&common::environment(), &engine_db, port, &log).unwrap()
    })
    .await
    .unwrap();
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        let reply = send("GET", &health, &[], "").await;
        if reply.status == 200 {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "health did not recover: {reply:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    server.stop().await;
    drop(restarted);
}

/// `/metrics` shows what the store holds and the room left on its server: each table's rows
/// and parts and each disk's space as the engine counts them, the searchable documents as search
/// statistics count them, and, read again by a service started after more ingest, the growth.
#[tokio::test]
async fn metrics_show_the_store_size_and_the_room_left() {
    let (config, db) = fresh_db().await;
    let dir = std::env::temp_dir().join(format!("store-size-{}", uuid::Uuid::new_v4().simple()));
    common::write_sessions(&dir.join("a"), 11, 3, 4, "capacity");
    common::ingest_paths(&config, &db, &dir.join("a")).await;
    // Another database on the same engine, which must not be counted.
    let (other_config, other_db) = fresh_db().await;
    common::write_sessions(&dir.join("other"), 13, 2, 3, "capacity");
    common::ingest_paths(&other_config, &other_db, &dir.join("other")).await;
    let (host, documents_before, events_before) = store_figures(&db).await;
    assert!(documents_before > 0);

    let page = store_page(config.clone(), db.clone()).await;
    let host_label = format!("host=\"{host}\"");
    let table = |name: &str, table: &str| {
        common::metric_sum(&page, name, &[&host_label, &format!("table=\"{table}\"")])
    };
    assert_eq!(
        common::metric_sum(&page, "moraine_mcp_store_documents", &[]),
        documents_before as f64
    );
    assert_eq!(
        table("moraine_mcp_store_table_rows{", "events"),
        events_before as f64
    );
    for name in ["events", "postings", "sessions", "turns"] {
        assert!(
            table("moraine_mcp_store_table_bytes{", name) > 0.0,
            "{name}"
        );
        assert!(
            table("moraine_mcp_store_table_parts{", name) >= 1.0,
            "{name}"
        );
    }
    // Only this database's tables: another test's database on the same engine is not counted.
    // Rows are compared where merges keep them (plain MergeTree): a merge of a summing or
    // replacing table between the two reads would change them.
    let engine_rows: Vec<(String, u64, String)> = db
        .read(
            "test",
            "SELECT p.table, sum(p.rows), any(t.engine) FROM system.parts AS p \
             JOIN system.tables AS t ON t.database = p.database AND t.name = p.table \
             WHERE p.database = currentDatabase() AND p.active GROUP BY p.table",
        )
        .fetch_all(&db, db.default_deadline())
        .await
        .unwrap();
    for (table_name, rows, engine) in &engine_rows {
        if engine != "MergeTree" || table_name == "write_gate" || table_name.starts_with("search_")
        {
            continue; // may be merged or written while the test runs
        }
        assert_eq!(
            table("moraine_mcp_store_table_rows{", table_name),
            *rows as f64,
            "{table_name}"
        );
    }
    for line in page
        .lines()
        .filter(|l| l.starts_with("moraine_mcp_store_table_rows{"))
    {
        assert!(
            engine_rows
                .iter()
                .any(|(t, _, _)| line.contains(&format!("table=\"{t}\""))),
            "a table of another database: {line}"
        );
    }
    let free = common::metric_sum(&page, "moraine_mcp_store_disk_free_bytes", &[&host_label]);
    let total = common::metric_sum(&page, "moraine_mcp_store_disk_total_bytes", &[&host_label]);
    assert!(free > 0.0 && free <= total, "free {free} of {total}");

    common::write_sessions(&dir.join("b"), 12, 5, 4, "capacity");
    common::ingest_paths(&config, &db, &dir.join("b")).await;
    let (_, documents_after, events_after) = store_figures(&db).await;
    assert!(events_after > events_before);
    let page = store_page(config, db).await;
    assert_eq!(
        common::metric_sum(&page, "moraine_mcp_store_documents", &[]),
        documents_after as f64
    );
    assert_eq!(
        common::metric_sum(
            &page,
            "moraine_mcp_store_table_rows{",
            &[&host_label, "table=\"events\""]
        ),
        events_after as f64
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The server's name, the searchable documents and the stored events, as the engine counts them.
async fn store_figures(db: &Db) -> (String, u64, u64) {
    let rows: Vec<(String, u64, u64)> = db
        .read(
            "test",
            "SELECT hostName(), assumeNotNull((SELECT toUInt64(sum(docs)) FROM corpus_stats)), \
             assumeNotNull((SELECT count() FROM events))",
        )
        .fetch_all(db, db.default_deadline())
        .await
        .unwrap();
    rows.into_iter().next().unwrap()
}

/// `/metrics` of a service started on `db`, once it has read the store's size (at start; `db`'s
/// metrics may hold an earlier service's reading).
async fn store_page(config: moraine_mcp::config::Settings, db: Db) -> String {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let server = TestServer::start(config, db).await;
    let give_up = Instant::now() + Duration::from_secs(30);
    let page = loop {
        let reply = send("GET", &format!("{}/metrics", server.base), &[], "").await;
        let page = reply.body;
        if common::metric_sum(
            &page,
            "moraine_mcp_store_last_refresh_timestamp_seconds",
            &[],
        ) >= since
        {
            break page;
        }
        assert!(Instant::now() < give_up, "the store's size was never read");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    parse_prometheus(&page);
    server.stop().await;
    page
}

/// Checks the text exposition format line by line and returns the samples.
fn parse_prometheus(text: &str) -> Vec<(String, String, f64)> {
    let mut samples = Vec::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with("# HELP ") || line.starts_with("# TYPE ") {
            continue;
        }
        assert!(!line.starts_with('#'), "unexpected comment: {line}");
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no value: {line}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value: {line}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (
                name,
                rest.strip_suffix('}')
                    .unwrap_or_else(|| panic!("bad labels: {line}")),
            ),
            None => (series, ""),
        };
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad name: {line}"
        );
        samples.push((name.to_owned(), labels.to_owned(), value));
    }
    samples
}

#[tokio::test]
async fn metrics_parse_and_hold_the_sla_histograms() {
    let (config, db) = fresh_db().await;
    let server = TestServer::start(config.clone(), db).await;
    let mut client = Mcp::legacy(&server.mcp_url, None).await;
    client
        .ok("search_sessions", json!({"query": "anything"}))
        .await;
    let reply = send("GET", &format!("{}/metrics", server.base), &[], "").await;
    assert_eq!(reply.status, 200);
    assert!(reply.headers["content-type"].starts_with("text/plain"));
    assert!(
        reply
            .body
            .contains("# TYPE moraine_mcp_tool_call_duration_seconds histogram")
    );
    let samples = parse_prometheus(&reply.body);
    let buckets: Vec<&(String, String, f64)> = samples
        .iter()
        .filter(|(n, l, _)| {
            n == "moraine_mcp_tool_call_duration_seconds_bucket"
                && l.contains("tool=\"search_sessions\"")
        })
        .collect();
    for target in config.sla.all_targets_ms() {
        let le = format!("le=\"{}\"", target as f64 / 1000.0);
        assert!(
            buckets.iter().any(|(_, l, _)| l.contains(&le)),
            "no bucket edge {le}"
        );
    }
    for name in [
        "moraine_mcp_tool_calls_total",
        "moraine_mcp_clickhouse_query_duration_seconds_bucket",
        "moraine_mcp_clickhouse_queries_in_flight",
        "moraine_mcp_clickhouse_query_slots",
        "moraine_mcp_clickhouse_query_slots_busy",
        "moraine_mcp_clickhouse_query_slot_waiters",
        "moraine_mcp_http_requests_total",
        "moraine_mcp_build_info",
        "moraine_mcp_process_resident_memory_bytes",
        "moraine_mcp_process_cpu_seconds_total",
        "moraine_mcp_process_open_fds",
        "moraine_mcp_ingest_local_events_total",
        "moraine_mcp_ingest_local_pending_bytes",
        "moraine_mcp_ingest_paced_writes_total",
        "moraine_mcp_ingest_paced_seconds_total",
    ] {
        assert!(samples.iter().any(|(n, _, _)| n == name), "missing {name}");
    }
    // Failure counters are exported at 0 before anything fails.
    let zero = |name: &str, labels: &[&str]| {
        samples
            .iter()
            .any(|(n, l, v)| n == name && labels.iter().all(|want| l.contains(want)) && *v == 0.0)
    };
    for (name, labels) in [
        (
            "moraine_mcp_tool_calls_total",
            &["tool=\"open\"", "outcome=\"busy\""][..],
        ),
        (
            "moraine_mcp_tool_calls_total",
            &["tool=\"list_sessions\"", "outcome=\"internal_error\""][..],
        ),
        (
            "moraine_mcp_query_log_failures_total",
            &["reason=\"insert_failed\""][..],
        ),
        (
            "moraine_mcp_ingest_requests_total",
            &["outcome=\"failed\""][..],
        ),
        (
            "moraine_mcp_ingest_local_files_total",
            &["outcome=\"unreadable\""][..],
        ),
    ] {
        assert!(zero(name, labels), "{name}{labels:?} is not exported at 0");
    }
    // A failed call never counts as meeting its SLA, however fast it failed.
    client.err("open", json!({"id": "not-an-id"})).await;
    let reply = send("GET", &format!("{}/metrics", server.base), &[], "").await;
    let samples = parse_prometheus(&reply.body);
    let sla = |met: &str| {
        samples
            .iter()
            .find(|(n, l, _)| {
                n == "moraine_mcp_tool_sla_total"
                    && l.contains("tool=\"open\"")
                    && l.contains(&format!("met=\"{met}\""))
            })
            .map(|(_, _, v)| *v)
    };
    assert_eq!((sla("true"), sla("false")), (Some(0.0), Some(1.0)));
    server.stop().await;
}
