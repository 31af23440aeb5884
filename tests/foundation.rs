//! The service foundation on the real engine over real HTTP: migrations, both MCP protocol
//! styles, health, metrics, Host/Origin checks, bearer tokens, configuration, stdio, limits.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Mcp, TestServer, config_for, fresh_db, send};
use moraine_mcp::config::TokenConfig;
use moraine_mcp::db::gate::{self, WhenMigrating};
use moraine_mcp::db::{Db, DbError};
use moraine_mcp::embedded::Engine;
use moraine_mcp::metrics::Metrics;
use moraine_mcp::migrate::{self, MigrateError};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BIN: &str = env!("CARGO_BIN_EXE_moraine-mcp");

#[derive(Debug, PartialEq, clickhouse::Row, serde::Deserialize)]
struct TableDef {
    name: String,
    create_table_query: String,
}

async fn schema_of(db: &Db) -> Vec<TableDef> {
    db.read(
        "test_schema",
        "SELECT name, create_table_query FROM system.tables WHERE database = currentDatabase() ORDER BY name",
    )
    .fetch_all(db, db.default_deadline())
    .await
    .unwrap()
}

#[tokio::test]
async fn migrations_apply_twice_with_the_same_result_and_refuse_edits() {
    let (config, db) = fresh_db().await;
    let first = schema_of(&db).await;
    assert!(first.iter().any(|t| t.name == "postings"));
    let again = migrate::migrate(&config.clickhouse, &db).await.unwrap();
    assert!(again.applied.is_empty());
    assert_eq!(
        again.already,
        (1..=migrate::latest_version()).collect::<Vec<_>>()
    );
    assert_eq!(schema_of(&db).await, first);
    let rows: u64 = db
        .read("test_count", "SELECT count() FROM schema_migrations")
        .fetch_optional(&db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rows, migrate::latest_version() as u64);

    db.write(
        "test_tamper",
        "ALTER TABLE schema_migrations UPDATE checksum = 'edited' WHERE version = 2 SETTINGS mutations_sync = 2",
    )
    .execute(&db, db.default_deadline())
    .await
    .unwrap();
    let error = migrate::migrate(&config.clickhouse, &db).await.unwrap_err();
    assert!(
        matches!(error, MigrateError::Edited { version: 2, .. }),
        "{error}"
    );
}

/// How many times each migration is recorded.
async fn records(db: &Db) -> Vec<(u32, u64)> {
    db.read(
        "t",
        "SELECT version, count() FROM schema_migrations GROUP BY version ORDER BY version",
    )
    .fetch_all(db, db.default_deadline())
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn migrations_started_at_once_run_one_after_the_other() {
    let config = config_for(&common::shared_engine_url());
    let handle = || Db::new(&config.clickhouse, Metrics::new(&config.sla));
    let (one, two, three) = (handle(), handle(), handle());
    one.wait_until_ready(Duration::from_secs(30)).await.unwrap();
    // Three processes upgrading one new database at once (say `up`, `ingest` and the compose
    // file's `migrate`): each migration is applied by one of them, once.
    let (a, b, c) = tokio::join!(
        migrate::migrate(&config.clickhouse, &one),
        migrate::migrate(&config.clickhouse, &two),
        migrate::migrate(&config.clickhouse, &three),
    );
    let mut applied: Vec<u32> = [a, b, c]
        .into_iter()
        .flat_map(|report| report.unwrap().applied)
        .collect();
    applied.sort_unstable();
    let all: Vec<u32> = (1..=migrate::latest_version()).collect();
    assert_eq!(applied, all, "each migration applied by exactly one run");
    let once: Vec<(u32, u64)> = all.iter().map(|&v| (v, 1)).collect();
    assert_eq!(records(&one).await, once);
}

/// The holders of live writer leases.
async fn live_writers(db: &Db) -> Vec<u64> {
    gate::live(db, gate::Role::Writer).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_migration_waits_for_writes_and_for_the_lease_of_a_writer_that_died() {
    let settings = config_for(&common::shared_engine_url());
    let handle = || Db::new(&settings.clickhouse, Metrics::new(&settings.sla));
    let (migrator, writer, other) = (handle(), handle(), handle());
    migrator
        .wait_until_ready(Duration::from_secs(30))
        .await
        .unwrap();
    migrate::migrate_to(&settings.clickhouse, &migrator, 9)
        .await
        .unwrap();
    // A writer that died with its lease a moment ago (it runs out in 20 s), and one that is
    // writing now.
    writer
        .write(
            "t",
            "INSERT INTO write_gate (role, holder, seq, until) \
             VALUES ('writer', 7, 1, now64(6) + INTERVAL 20 SECOND)",
        )
        .execute(&writer, writer.default_deadline())
        .await
        .unwrap();
    let writing = writer.enter_write(WhenMigrating::Refuse).await.unwrap();
    // A lease says what holds it, for the operator of a migration that waits.
    let labels = gate::live_labelled(&writer, gate::Role::Writer)
        .await
        .unwrap();
    let this = format!(", pid {}", std::process::id());
    assert!(
        labels.iter().any(|(_, label)| label.ends_with(&this)),
        "{labels:?}"
    );
    let config = settings.clickhouse.clone();
    let upgrade = tokio::spawn(async move { migrate::migrate(&config, &migrator).await });
    let still_waiting = |upgrade: &tokio::task::JoinHandle<_>| {
        assert!(
            !upgrade.is_finished(),
            "the upgrade did not wait for writers"
        );
    };
    // The migration announces itself, then waits: another process's write is refused (a push
    // request answered 503), and the schema is untouched while the write runs.
    let started = Instant::now();
    loop {
        match other.enter_write(WhenMigrating::Refuse).await {
            Err(DbError::Migrating) => break,
            Ok(permit) => drop(permit),
            Err(error) => panic!("{error}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "never refused"
        );
        still_waiting(&upgrade);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    still_waiting(&upgrade);
    assert_eq!(records(&writer).await.last().map(|r| r.0), Some(9));
    // The write ends and its process gives its lease up; the migration still waits for the
    // dead writer's lease to run out.
    drop(writing);
    let mut left = live_writers(&writer).await;
    while left.len() > 1 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = live_writers(&writer).await;
    }
    // (On a machine slow enough for the dead lease to have run out already, there is
    // nothing left to see.)
    if left == [7] {
        still_waiting(&upgrade);
        assert_eq!(records(&writer).await.last().map(|r| r.0), Some(9));
    }
    // Then it goes ahead, and a writer that waits for it writes once it is over.
    let waiting = tokio::spawn(async move {
        let permit = other.enter_write(WhenMigrating::Wait).await.unwrap();
        let version = records(&other).await.last().map(|r| r.0);
        drop(permit);
        version
    });
    let limit = Duration::from_secs(120);
    let report = tokio::time::timeout(limit, upgrade).await.unwrap();
    assert_eq!(report.unwrap().unwrap().applied, vec![10]);
    let seen = tokio::time::timeout(limit, waiting).await.unwrap();
    assert_eq!(
        seen.unwrap(),
        Some(10),
        "the waiting write started after the migration"
    );
    // Nothing pending: a migrate run neither announces itself nor waits for writers.
    let writing = writer.enter_write(WhenMigrating::Refuse).await.unwrap();
    let again = tokio::time::timeout(
        Duration::from_secs(60),
        migrate::migrate(&settings.clickhouse, &handle()),
    )
    .await
    .expect("a run with nothing to apply does not wait for writes")
    .unwrap();
    assert!(again.applied.is_empty());
    drop(writing);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_migration_lease_that_ran_out_stays_out_and_says_so() {
    let (settings, db) = fresh_db().await;
    // A lease of 2 s, where its renewals come every 5 s: it runs out before the first.
    let lease = gate::MigratorLease::acquire_lasting(&db, Duration::from_secs(2))
        .await
        .unwrap();
    let writer = Db::new(&settings.clickhouse, Metrics::new(&settings.sla));
    let migrating = writer.enter_write(WhenMigrating::Refuse).await;
    assert!(
        matches!(migrating, Err(DbError::Migrating)),
        "{migrating:?}"
    );
    // Once it has run out, writes resume, and the migration (which checks before each
    // statement) knows it no longer holds the gate.
    let mut permit = writer.enter_write(WhenMigrating::Refuse).await;
    let started = Instant::now();
    while permit.is_err() {
        assert!(started.elapsed() < Duration::from_secs(60), "never ran out");
        tokio::time::sleep(Duration::from_millis(200)).await;
        permit = writer.enter_write(WhenMigrating::Refuse).await;
    }
    assert!(!lease.holds());
    drop(permit);
    // Its renewal, due meanwhile, does not bring it back.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let migrators = gate::live(&db, gate::Role::Migrator).await.unwrap();
    assert_eq!(migrators, Vec::<u64>::new());
    assert!(!lease.holds());
    lease.end().await;
}

/// Rows and a hash of every column of every row of `turns` and of `sessions` (FINAL left out: a
/// row copied twice would count twice).
async fn copied_tables(db: &Db) -> Vec<(u64, u64)> {
    let mut hashes = Vec::new();
    for table in ["turns", "sessions"] {
        let hash: (u64, u64) = db
            .read(
                "t",
                "SELECT count(), sum(cityHash64(*)) FROM {t:Identifier}",
            )
            .param("t", table)
            .fetch_optional(db, db.default_deadline())
            .await
            .unwrap()
            .unwrap();
        hashes.push(hash);
    }
    hashes
}

/// Whether `table` has schema 10's granules.
async fn has_small_granules(db: &Db, table: &str) -> bool {
    let engine: String = db
        .read(
            "t",
            "SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = {t:String}",
        )
        .param("t", table)
        .fetch_optional(db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    engine.contains("index_granularity = 128,")
}

#[tokio::test]
async fn turns_and_sessions_of_the_previous_schema_get_small_granules_and_keep_every_row() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("granules-{}", uuid::Uuid::new_v4().simple()));
    let settings = config_for(&common::shared_engine_url());
    let db = Db::new(&settings.clickhouse, Metrics::new(&settings.sla));
    db.wait_until_ready(Duration::from_secs(30)).await.unwrap();
    migrate::migrate_to(&settings.clickhouse, &db, 9)
        .await
        .unwrap();
    assert!(!has_small_granules(&db, "turns").await);
    common::write_sessions(&dir, 7, 12, 6, "granule");
    common::ingest_paths(&settings, &db, &dir).await;
    // An ingest run that has ended holds no lease a migration would wait for.
    assert_eq!(live_writers(&db).await, Vec::<u64>::new());
    let before = common::snapshot(&db).await;
    let hashes = copied_tables(&db).await;
    let sql = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sql/010_point_lookups.sql"),
    )
    .unwrap();
    let create = |table: &str| {
        let from = sql
            .find(&format!("CREATE TABLE IF NOT EXISTS {table}"))
            .unwrap();
        sql[from..from + sql[from..].find(';').unwrap()].to_owned()
    };
    for statement in [
        // A run cut off after copying some turns: the copy starts again from an empty table.
        create("turns_fine"),
        "INSERT INTO turns_fine SELECT * FROM turns LIMIT 3".to_owned(),
        // A run cut off inside the rename of sessions, which had moved the old table away but
        // not yet given the copy its name: the copy takes it, and the old table goes only then.
        create("sessions_fine"),
        "INSERT INTO sessions_fine SELECT * FROM sessions".to_owned(),
        "RENAME TABLE sessions TO sessions_coarse".to_owned(),
    ] {
        db.write("t", &statement)
            .execute(&db, db.default_deadline())
            .await
            .unwrap();
    }

    migrate::migrate(&settings.clickhouse, &db).await.unwrap();
    assert!(has_small_granules(&db, "turns").await);
    assert!(has_small_granules(&db, "sessions").await);
    let after = copied_tables(&db).await;
    assert_eq!(after, hashes, "every column of every row, once");
    common::snapshot(&db).await.assert_same_as(&before);
    // Cut off before its record: it runs again and changes nothing.
    db.write(
        "t",
        "ALTER TABLE schema_migrations DELETE WHERE version = 10 SETTINGS mutations_sync = 2",
    )
    .execute(&db, db.default_deadline())
    .await
    .unwrap();
    migrate::migrate(&settings.clickhouse, &db).await.unwrap();
    let again = copied_tables(&db).await;
    assert_eq!(again, hashes);

    // New logs land in the new tables as in a new database.
    common::write_sessions(&dir, 8, 5, 4, "granule");
    common::ingest_paths(&settings, &db, &dir).await;
    let (fresh_settings, fresh) = fresh_db().await;
    common::ingest_paths(&fresh_settings, &fresh, &dir).await;
    common::snapshot(&db)
        .await
        .assert_same_as(&common::snapshot(&fresh).await);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn initialize_and_tools_list_in_both_protocol_styles() {
    let (config, db) = fresh_db().await;
    let server = TestServer::start(config, db).await;
    for modern in [false, true] {
        let mut client = if modern {
            Mcp::modern(&server.mcp_url, None).await
        } else {
            Mcp::legacy(&server.mcp_url, None).await
        };
        let list = client.request("tools/list", None, json!({})).await;
        let tools = list["result"]["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["search_sessions", "list_sessions", "open"]);
        for tool in tools {
            assert_eq!(tool["inputSchema"]["type"], "object");
            assert_eq!(tool["outputSchema"]["type"], "object");
            assert_eq!(tool["annotations"]["readOnlyHint"], true);
        }
        if modern {
            assert_eq!(list["result"]["resultType"], "complete");
        }
        // An unknown tool stays a JSON-RPC error.
        let unknown = client
            .request(
                "tools/call",
                Some("nope"),
                json!({"name": "nope", "arguments": {}}),
            )
            .await;
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    }
    // Stateless by default: no session is issued and GET has no stream.
    let get = send(
        "GET",
        &server.mcp_url,
        &[("accept", "text/event-stream")],
        "",
    )
    .await;
    assert_eq!(get.status, 405);
    server.stop().await;
}

#[tokio::test]
async fn stateful_mode_issues_sessions() {
    let (mut config, db) = fresh_db().await;
    config.server.stateful = true;
    let server = TestServer::start(config, db).await;
    let init = send(
        "POST",
        &server.mcp_url,
        &[("content-type", "application/json"), ("accept", "application/json, text/event-stream")],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": common::LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).to_string(),
    )
    .await;
    assert_eq!(init.status, 200);
    assert!(
        init.headers
            .get("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let session = init
        .headers
        .get("mcp-session-id")
        .cloned()
        .expect("a session id");
    assert_eq!(init.json()["result"]["serverInfo"]["name"], "moraine-mcp");
    // The instructions every agent gets name every harness the service reads.
    let instructions = init.json()["result"]["instructions"]
        .as_str()
        .unwrap()
        .to_owned();
    for harness in moraine_mcp::vocab::Harness::all() {
        assert!(instructions.contains(harness.title()), "{instructions}");
    }
    let mut client = Mcp::legacy(&server.mcp_url, None).await;
    let list = client.request("tools/list", None, json!({})).await;
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 3);
    // A request without the session is refused; ending the session is accepted.
    let bare = send(
        "POST",
        &server.mcp_url,
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
    )
    .await;
    assert_eq!(bare.status, 400);
    let delete = send(
        "DELETE",
        &server.mcp_url,
        &[("mcp-session-id", &session)],
        "",
    )
    .await;
    assert!(delete.status == 200 || delete.status == 202, "{delete:?}");
    server.stop().await;
}

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

#[tokio::test]
async fn foreign_host_or_origin_is_forbidden() {
    let (config, db) = fresh_db().await;
    let server = TestServer::start(config, db).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let base = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let with = |extra: (&'static str, String)| {
        let mut h: Vec<(&str, String)> = base.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        h.push(extra);
        h
    };
    let port = server.base.rsplit(':').next().unwrap().to_owned();
    for (header, value, expected) in [
        ("host", "evil.example.com".to_owned(), 403),
        ("origin", "http://evil.example.com".to_owned(), 403),
        ("origin", format!("http://127.0.0.1:{port}"), 200),
        ("origin", format!("http://localhost:{port}"), 200),
    ] {
        let headers = with((header, value.clone()));
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let reply = send("POST", &server.mcp_url, &headers, &body).await;
        assert_eq!(reply.status, expected, "{header}: {value}");
    }
    server.stop().await;
}

#[tokio::test]
async fn bearer_tokens_are_required_when_configured() {
    let (mut config, db) = fresh_db().await;
    config.auth.tokens = vec![TokenConfig::reader("laptop", "s3cret-token-0123456789")];
    let server = TestServer::start(config, db).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let base = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let missing = send("POST", &server.mcp_url, &base, &body).await;
    assert_eq!(missing.status, 401);
    assert!(missing.headers["www-authenticate"].starts_with("Bearer"));
    let mut wrong = base.to_vec();
    wrong.push(("authorization", "Bearer s3cret-token-0123456780"));
    let reply = send("POST", &server.mcp_url, &wrong, &body).await;
    assert_eq!(reply.status, 401);
    assert!(reply.headers["www-authenticate"].contains("invalid_token"));
    let mut client = Mcp::legacy(&server.mcp_url, Some("s3cret-token-0123456789")).await;
    client.ok("search_sessions", json!({"query": "x"})).await;
    // Health and metrics stay open; metrics count the token by its position for an anonymous
    // scraper (its name needs a `metrics` token), and never show the token itself.
    let metrics = send("GET", &format!("{}/metrics", server.base), &[], "").await;
    assert_eq!(metrics.status, 200);
    assert!(metrics.body.contains("token=\"token-1\""));
    assert!(!metrics.body.contains("laptop"));
    assert!(!metrics.body.contains("s3cret"));
    server.stop().await;
}

#[test]
fn a_bad_config_exits_non_zero_naming_the_key() {
    let dir = std::env::temp_dir().join(format!("moraine-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(
        &path,
        "[server]\nlisten = \"127.0.0.1:0\"\nlisten_adress = \"x\"\n",
    )
    .unwrap();
    let output = Command::new(BIN)
        .arg("--config")
        .arg(&path)
        .arg("migrate")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("listen_adress"), "{stderr}");

    std::fs::write(&path, "[bm25]\nb = 3.0\n").unwrap();
    let output = Command::new(BIN)
        .arg("--config")
        .arg(&path)
        .arg("migrate")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("bm25.b"));

    let output = Command::new(BIN)
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env("MORAINE_MCP_CLICKHOUSE__URL", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("server.listen"));

    let output = Command::new(BIN)
        .arg("migrate")
        .env("MORAINE_MCP_SERVER__NOPE", "1")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("MORAINE_MCP_SERVER__NOPE"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn stdio_mode_serves_the_same_tools() {
    let (config, _db) = fresh_db().await;
    let mut child = Command::new(BIN)
        .args(["serve", "--stdio", "--require-clickhouse"])
        .env("MORAINE_MCP_CLICKHOUSE__URL", &config.clickhouse.url)
        .env(
            "MORAINE_MCP_CLICKHOUSE__DATABASE",
            &config.clickhouse.database,
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut exchange = |message: Value| -> Option<Value> {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        message.get("id")?;
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        Some(serde_json::from_str(&line).unwrap())
    };
    let init = exchange(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": common::LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})).unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "moraine-mcp");
    exchange(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let list = exchange(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).unwrap();
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 3);
    let call = exchange(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "open", "arguments": {"id": "nope"}}})).unwrap();
    assert_eq!(call["result"]["isError"], true);
    assert_eq!(
        call["result"]["structuredContent"]["error"]["code"],
        "invalid_id"
    );
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn sigterm_stops_the_server_gracefully() {
    let (config, _db) = fresh_db().await;
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("MORAINE_MCP_CLICKHOUSE__URL", &config.clickhouse.url)
        .env(
            "MORAINE_MCP_CLICKHOUSE__DATABASE",
            &config.clickhouse.database,
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("is serving MCP at") {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "server exited early"
        );
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn bodies_over_the_limit_are_refused() {
    let (mut config, db) = fresh_db().await;
    config.server.request_body_limit_bytes = 64 * 1024;
    let server = TestServer::start(config, db).await;
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_sessions", "arguments": {"query": "x".repeat(100_000)}}}).to_string();
    let reply = send(
        "POST",
        &server.mcp_url,
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        &big,
    )
    .await;
    assert_eq!(reply.status, 413);

    // The same body sent chunked, without a Content-Length to refuse up front.
    let address = server.base.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n"
    );
    for chunk in big.as_bytes().chunks(8192) {
        request.push_str(&format!(
            "{:x}\r\n{}\r\n",
            chunk.len(),
            std::str::from_utf8(chunk).unwrap()
        ));
    }
    request.push_str("0\r\n\r\n");
    // The server may answer (and close) before reading everything; a failed write is fine.
    let _ = stream.write_all(request.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("payload_too_large"), "{answer}");

    let missing = send("GET", &format!("{}/nowhere", server.base), &[], "").await;
    assert_eq!(missing.status, 404);
    // Only the endpoint itself is MCP; paths below it are not.
    let below = send("POST", &format!("{}/extra", server.mcp_url), &[], "{}").await;
    assert_eq!(below.status, 404);
    server.stop().await;
}

#[tokio::test]
async fn a_full_query_pool_answers_busy_and_a_short_deadline_answers_deadline_exceeded() {
    let (mut config, _db) = fresh_db().await;
    config.clickhouse.max_concurrent_queries = 1;
    config.clickhouse.queue_timeout_ms = 50;
    let db = Db::new(&config.clickhouse, Metrics::new(&config.sla));
    let server = TestServer::start(config.clone(), db.clone()).await;
    let holder = db.clone();
    let hold = tokio::spawn(async move {
        holder
            .read("test_hold", "SELECT sleep(2)")
            .fetch_all::<u8>(&holder, Instant::now() + Duration::from_secs(10))
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let direct = db
        .read("test_try", "SELECT 1")
        .fetch_all::<u8>(&db, Instant::now() + Duration::from_secs(5))
        .await;
    assert!(matches!(direct, Err(DbError::Busy)), "{direct:?}");
    // The write gate's leases do not wait for a slot: they are renewed on time however busy.
    let permit = db.enter_write(WhenMigrating::Refuse).await;
    assert!(permit.is_ok(), "{permit:?}");
    drop(permit);
    let mut client = Mcp::legacy(&server.mcp_url, None).await;
    let (code, envelope) = client
        .err("search_sessions", json!({"query": "anything"}))
        .await;
    assert_eq!(code, "busy");
    assert_eq!(envelope["error"]["details"]["retryable"], true);
    hold.await.unwrap().unwrap();
    server.stop().await;

    let (mut config, db) = fresh_db().await;
    config.tools.search_deadline_ms = 1;
    let server = TestServer::start(config, db).await;
    let mut client = Mcp::legacy(&server.mcp_url, None).await;
    let (code, envelope) = client
        .err("search_sessions", json!({"query": "anything"}))
        .await;
    assert_eq!(code, "deadline_exceeded");
    assert_eq!(envelope["error"]["details"]["retryable"], true);
    server.stop().await;
}

#[test]
fn each_commands_help_lists_only_the_options_that_apply_to_it() {
    let help = |command: &str| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_moraine-mcp"))
            .args([command, "--help"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{command} --help failed");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let cases: [(&str, &[&str], &[&str]); 8] = [
        (
            "serve",
            &["--listen", "--stdio", "--clickhouse-url", "--config"],
            &["--harness", "--data-dir", "--server"],
        ),
        (
            "up",
            &["--listen", "--data-dir", "--engine-port", "--no-ingest"],
            &["--clickhouse-url", "--database", "--harness"],
        ),
        (
            "ingest",
            &["--harness", "--source", "--clickhouse-url", "--database"],
            &["--listen", "--data-dir", "--server"],
        ),
        (
            "migrate",
            &["--clickhouse-url", "--database"],
            &["--listen", "--harness"],
        ),
        (
            "reindex",
            &["--harness", "--clickhouse-url"],
            &["--listen", "--data-dir"],
        ),
        (
            "push",
            &["--server", "--token"],
            &["--listen", "--clickhouse-url", "--database", "--data-dir"],
        ),
        (
            "healthcheck",
            &["--url"],
            &["--clickhouse-url", "--harness", "--data-dir"],
        ),
        (
            "forget",
            &[
                "--demo",
                "--session",
                "--source",
                "--everything",
                "--clickhouse-url",
            ],
            &["--listen", "--harness"],
        ),
    ];
    for (command, has, lacks) in cases {
        let text = help(command);
        for option in has {
            assert!(
                text.contains(option),
                "{command} --help lacks {option}:\n{text}"
            );
        }
        for option in lacks {
            assert!(
                !text.contains(option),
                "{command} --help lists {option}:\n{text}"
            );
        }
    }
}

#[tokio::test]
async fn forget_asks_before_dropping_and_a_server_whose_schema_is_gone_says_so_and_recovers() {
    let (settings, db) = fresh_db().await;
    common::ingest_paths(&settings, &db, &common::fixtures()).await;
    let server = TestServer::start(settings.clone(), db.clone()).await;
    let home = std::env::temp_dir().join(format!("moraine-forget-home-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let forget = |extra: &[&str]| {
        Command::new(BIN)
            .args(["forget", "--everything"])
            .args(extra)
            .env("HOME", &home)
            .env("MORAINE_MCP_CLICKHOUSE__URL", &settings.clickhouse.url)
            .env(
                "MORAINE_MCP_CLICKHOUSE__DATABASE",
                &settings.clickhouse.database,
            )
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // Without a terminal to ask on, and without --yes: nothing is dropped.
    let refused = forget(&[]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(
        said.contains("--yes") && said.contains("sessions"),
        "{said}"
    );
    let mut client = Mcp::legacy(&server.mcp_url, None).await;
    let found = client.ok("search_sessions", json!({"query": "test"})).await;
    assert!(found["data"]["result_count"].as_u64().unwrap() > 0);
    // With --yes the database goes; the running server says why it cannot serve.
    let dropped = forget(&["--yes"]);
    assert!(
        dropped.status.success(),
        "{}",
        String::from_utf8_lossy(&dropped.stderr)
    );
    let health = send("GET", &format!("{}/healthz", server.base), &[], "").await;
    assert_eq!(health.status, 503);
    let reason = health.json()["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("migrate"), "{reason}");
    let (code, envelope) = client
        .err("search_sessions", json!({"query": "test"}))
        .await;
    assert_eq!(code, "backend_failure");
    let message = envelope["error"]["message"].as_str().unwrap();
    assert!(message.contains("moraine-mcp migrate"), "{message}");
    // Once the schema is back, it serves again by itself.
    migrate::migrate(&settings.clickhouse, &db).await.unwrap();
    let health = send("GET", &format!("{}/healthz", server.base), &[], "").await;
    assert_eq!(health.status, 200, "{}", health.body);
    client.ok("search_sessions", json!({"query": "test"})).await;
    server.stop().await;
}
