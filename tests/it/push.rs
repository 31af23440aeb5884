//! Team memory on the real engine over real HTTP: laptops push their logs to one server's
//! ingest API, with scoped tokens. Concurrent pushes, a push killed mid-upload, a server
//! restarted mid-push and a cut-off body all end with exactly what a local ingest of the same
//! files stores; tokens read and write only what their scopes and sources allow.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    Mcp, TestServer, assert_statistics_exact, fresh_db, ingest_paths, send, snapshot,
    write_sessions,
};
use moraine_mcp::config::{Scope, Settings, TokenConfig};
use moraine_mcp::db::{Db, gate};
use moraine_mcp::ingest::files;
use moraine_mcp::metrics::Metrics;
use moraine_mcp::migrate;
use moraine_mcp::push::{self, Client};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BIN: &str = env!("CARGO_BIN_EXE_moraine-mcp");
const ALICE: &str = "alice-laptop-token-0123456789";
const BOB: &str = "bob-laptop-token-0123456789ab";
const READER: &str = "reader-token-0123456789abcdef";
const ALICE_READER: &str = "alice-reader-token-01234567";
const PROMETHEUS: &str = "prometheus-token-0123456789ab";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("moraine-push-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A team server's tokens: two laptops that ingest as themselves, a reader of everything, and
/// a reader of alice's sessions only.
fn team(mut settings: Settings) -> Settings {
    let mut alice = TokenConfig::reader("alice-laptop", ALICE);
    alice.scopes = vec![Scope::Ingest];
    alice.source = Some("alice".into());
    let mut bob = TokenConfig::reader("bob-laptop", BOB);
    bob.scopes = vec![Scope::Ingest];
    bob.source = Some("bob".into());
    let mut alice_reader = TokenConfig::reader("alice-reader", ALICE_READER);
    alice_reader.read_sources = Some(vec!["alice".into()]);
    let mut prometheus = TokenConfig::reader("prometheus", PROMETHEUS);
    prometheus.scopes = vec![Scope::Metrics];
    settings.auth.tokens = vec![
        alice,
        bob,
        TokenConfig::reader("reader", READER),
        alice_reader,
        prometheus,
    ];
    settings
}

fn client(server: &TestServer, token: &str) -> Client {
    Client::new(&server.base, Some(token), None, Duration::from_secs(60)).unwrap()
}

/// A log of `project` (the directory's first entry).
fn first_log(project: &Path) -> PathBuf {
    std::fs::read_dir(project)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

fn logs_under(dir: &Path) -> Vec<files::LogFile> {
    let (logs, problems) = files::from_paths(&[dir.to_owned()], None, None);
    assert!(problems.is_empty(), "{problems:?}");
    logs
}

/// A Codex log whose session ID comes from its content (not its file name), and that ID.
fn codex_log() -> (String, &'static str) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/codex/rollout-2026-03-02T09-14-07-23435693-bfda-4cfd-8fa1-17c536123c31.jsonl");
    (
        std::fs::read_to_string(fixture).unwrap(),
        "23435693-bfda-4cfd-8fa1-17c536123c31",
    )
}

/// The Codex logs under `dir`.
fn codex_logs(dir: &Path) -> Vec<files::LogFile> {
    let (logs, problems) = files::from_paths(
        &[dir.to_owned()],
        Some(moraine_mcp::vocab::Harness::Codex),
        None,
    );
    assert!(problems.is_empty(), "{problems:?}");
    logs
}

/// Pushes the Codex logs under `dir` as `client`: how many were sent, and how many failed.
async fn push_codex(client: &Client, dir: &Path) -> (usize, usize) {
    let pushed = push::push_logs(client, &codex_logs(dir), 1 << 20, false)
        .await
        .unwrap();
    (pushed.sent, pushed.failed)
}

/// Replaces the log `name` under `dir` with its first line (a session with no event) and
/// pushes `dir` again as `client`.
async fn cut_to_first_line_and_push(client: &Client, dir: &Path, name: &str) {
    let path = dir.join(name);
    let first = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    std::fs::write(&path, first + "\n").unwrap();
    assert_eq!(push_codex(client, dir).await.1, 0);
}

/// What a local ingest of `dirs` stores, as a snapshot (the reference for pushes).
async fn local_reference(dirs: &[&Path]) -> common::Snapshot {
    let (config, db) = fresh_db().await;
    for dir in dirs {
        ingest_paths(&config, &db, dir).await;
    }
    snapshot(&db).await
}

/// Each event is stored once.
async fn assert_no_duplicates(db: &Db) {
    let (rows, unique): (u64, u64) = db
        .read(
            "t",
            "SELECT count(), uniqExact(session_key, event_key) FROM events",
        )
        .fetch_optional(db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rows, unique, "duplicate events");
}

#[tokio::test]
async fn two_laptops_push_concurrently_and_each_finds_the_others_sessions() {
    let (a, b) = (scratch("two-a"), scratch("two-b"));
    write_sessions(&a, 0xa11ce, 12, 6, "alphaword");
    write_sessions(&b, 0xb0b, 12, 6, "betaword");
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    let (alice, bob) = (client(&server, ALICE), client(&server, BOB));
    let (logs_a, logs_b) = (logs_under(&a), logs_under(&b));
    let (pushed_a, pushed_b) = tokio::join!(
        push::push_logs(&alice, &logs_a, 16 * 1024, false),
        push::push_logs(&bob, &logs_b, 16 * 1024, false),
    );
    let (pushed_a, pushed_b) = (pushed_a.unwrap(), pushed_b.unwrap());
    assert_eq!((pushed_a.sent, pushed_a.failed), (12, 0));
    assert_eq!((pushed_b.sent, pushed_b.failed), (12, 0));

    // Exactly what a local ingest of both trees stores: same IDs, rows and statistics.
    let pushed = snapshot(&db).await;
    assert_statistics_exact(&pushed);
    assert_eq!(pushed, local_reference(&[&a, &b]).await);
    assert_no_duplicates(&db).await;

    // Each laptop's sessions are found by the other's people, under its source.
    let mut reader = Mcp::modern(&server.mcp_url, Some(READER)).await;
    for (word, source) in [("alphaword", "alice"), ("betaword", "bob")] {
        let found = reader
            .ok("search_sessions", json!({"query": word, "n_hits": 50}))
            .await;
        let hits = found["data"]["results"].as_array().unwrap();
        assert!(!hits.is_empty());
        assert!(
            hits.iter().all(|h| h["session"]["source"] == source),
            "{word}"
        );
    }
    // Pushing again sends nothing.
    let again = push::push_logs(&alice, &logs_a, 16 * 1024, false)
        .await
        .unwrap();
    assert_eq!((again.sent, again.unchanged, again.events), (0, 12, 0));
    // Freshness per source: when each last pushed, and the bytes and events it sent.
    let metrics = send("GET", &format!("{}/metrics", server.base), &[], "").await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    for (source, pushed) in [("alice", &pushed_a), ("bob", &pushed_b)] {
        let label = format!("source=\"{source}\"");
        let of = |name: &str| common::metric_sum(&metrics.body, name, &[&label]);
        let last_push = of("moraine_mcp_ingest_last_push_timestamp_seconds");
        assert!(last_push > 0.0 && last_push <= now, "{source}: {last_push}");
        assert_eq!(
            of("moraine_mcp_ingest_received_bytes_total"),
            pushed.bytes as f64,
            "{source}"
        );
        assert_eq!(
            of("moraine_mcp_ingest_events_total"),
            pushed.events as f64,
            "{source}"
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_taking_one_request_at_a_time_gets_every_log_once() {
    let dir = scratch("one-at-a-time");
    write_sessions(&dir, 0x0e, 16, 6, "oneword");
    let (mut settings, db) = fresh_db().await;
    // The client starts several requests at once: those refused (429) have their workers hand
    // their logs to the others and stop, down to one.
    settings.ingest.max_concurrent_requests = 1;
    let server = TestServer::start(team(settings), db.clone()).await;
    let pushed = push::push_logs(&client(&server, ALICE), &logs_under(&dir), 8 * 1024, false)
        .await
        .unwrap();
    assert_eq!((pushed.sent, pushed.failed), (16, 0));
    assert!((1..=2).contains(&pushed.gave_way), "{}", pushed.gave_way);
    let stored = snapshot(&db).await;
    assert_statistics_exact(&stored);
    stored.assert_same_as(&local_reference(&[&dir]).await);
    assert_no_duplicates(&db).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_without_a_valid_token_holds_no_ingest_slot_and_no_body_is_read() {
    let (mut settings, db) = fresh_db().await;
    settings.ingest.max_concurrent_requests = 1;
    let server = TestServer::start(team(settings), db.clone()).await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    // Uploads announced large and never finished: without a token, and with a wrong one, to
    // the ingest API and to the MCP endpoint.
    let mut stalled = Vec::new();
    let requests = [
        ("/ingest/v1/batch?harness=claude-code", 8_000_000),
        ("/mcp", 900_000),
    ];
    for ((path, length), bearer) in requests.into_iter().flat_map(|request| {
        ["", "Authorization: Bearer not-a-token-of-this-server\r\n"].map(|b| (request, b))
    }) {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{bearer}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(b"{\"logs\":[").await.unwrap();
        // Answered at once, before the body: not a slot taken (429 for the second) nor an
        // upload waited for until it stalls.
        let mut status = [0u8; 12];
        stream.read_exact(&mut status).await.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&status),
            "HTTP/1.1 401",
            "{path} {bearer}"
        );
        stalled.push(stream);
    }
    // A client that sends its whole body before reading gets the 401, not a reset.
    let body = "x".repeat(900_000);
    let mut whole = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    whole.write_all(head.as_bytes()).await.unwrap();
    whole.write_all(body.as_bytes()).await.unwrap();
    let mut status = [0u8; 12];
    whole.read_exact(&mut status).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&status), "HTTP/1.1 401");
    // With those connections still open, a laptop's push takes the one slot.
    let dir = scratch("no-slot-without-token");
    write_sessions(&dir, 0x5a, 2, 3, "slotword");
    let pushed = push::push_logs(&client(&server, ALICE), &logs_under(&dir), 64 * 1024, false)
        .await
        .unwrap();
    assert_eq!((pushed.sent, pushed.failed, pushed.gave_way), (2, 0, 0));
    drop(stalled);
    server.stop().await;
}

#[tokio::test]
async fn a_push_killed_mid_upload_and_run_again_stores_every_event_once() {
    let dir = scratch("killed");
    write_sessions(&dir, 0x41, 30, 12, "killword");
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    let run = |chunk: &str| {
        Command::new(BIN)
            .args([
                "push",
                "--server",
                &server.base,
                "--token",
                ALICE,
                "--no-progress",
            ])
            .args(["--chunk-bytes", chunk])
            .arg(&dir)
            .env("HOME", &dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // Small chunks, so the upload takes many requests; killed once part of it is in.
    let mut child = run("2048");
    wait_for(&db, |(_, events)| events > 200).await;
    child.kill().unwrap();
    child.wait().unwrap();
    let (_, partial) = counts(&db).await;
    // Waited for on another thread: the server runs on this test's runtime.
    let rerun = run("65536");
    let output = tokio::task::spawn_blocking(move || rerun.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let pushed = snapshot(&db).await;
    assert!(
        partial < pushed.events.len() as u64,
        "the kill came too late to test anything"
    );
    assert_statistics_exact(&pushed);
    pushed.assert_same_as(&local_reference(&[&dir]).await);
    assert_no_duplicates(&db).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_schema_upgrade_while_laptops_push_loses_nothing() {
    let (early, late) = (scratch("upgrade-early"), scratch("upgrade-late"));
    write_sessions(&early, 0x51, 6, 6, "upgradeword");
    write_sessions(&late, 0x52, 12, 8, "upgradeword");
    // A server on the previous schema, which the upgrade copies `turns` and `sessions` of.
    let settings = team(common::without_vectors(common::config_for(
        &common::shared_engine_url(),
    )));
    let handle = || Db::new(&settings.clickhouse, Metrics::new(&settings.sla));
    let db = handle();
    db.wait_until_ready(Duration::from_secs(30)).await.unwrap();
    migrate::migrate_to(&settings.clickhouse, &db, 9)
        .await
        .unwrap();
    let server = TestServer::start(settings.clone(), db.clone()).await;
    let pushed = push::push_logs(&client(&server, ALICE), &logs_under(&early), 4096, false)
        .await
        .unwrap();
    assert_eq!(pushed.failed, 0);

    // Another migration holds the gate: the server has stopped writing, and says so.
    let holder = gate::MigratorLease::acquire(&handle()).await.unwrap();
    let log = logs_under(&late).remove(0);
    let url = format!(
        "{}/ingest/v1/append?harness=claude-code&path={}&offset=0",
        server.base,
        log.path.display()
    );
    let bearer = format!("Bearer {ALICE}");
    let body = std::fs::read_to_string(&log.path).unwrap();
    let refused = send("POST", &url, &[("authorization", bearer.as_str())], &body).await;
    assert_eq!(refused.status, 503, "{refused:?}");
    assert!(refused.headers.contains_key("retry-after"));
    assert!(
        refused.json()["message"]
            .as_str()
            .unwrap()
            .contains("migrated")
    );
    // Counted as an upgrade's pause, not as a failure to alert on.
    let metrics = send("GET", &format!("{}/metrics", server.base), &[], "").await;
    let requests = |outcome: &str| {
        let label = format!("outcome=\"{outcome}\"");
        common::metric_sum(
            &metrics.body,
            "moraine_mcp_ingest_requests_total",
            &[&label],
        )
    };
    assert_eq!((requests("migrating"), requests("failed")), (1.0, 0.0));

    // The upgrade queues behind it while a laptop pushes (and is told to retry).
    let config = settings.clickhouse.clone();
    let upgrader = handle();
    let upgrade = tokio::spawn(async move { migrate::migrate(&config, &upgrader).await });
    let pusher = client(&server, ALICE);
    let logs = logs_under(&late);
    let push = tokio::spawn(async move { push::push_logs(&pusher, &logs, 4096, false).await });
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!upgrade.is_finished() && !push.is_finished());
    holder.end().await;
    // The upgrade copies the tables while the pushes wait; they resume once it is over.
    assert_eq!(
        upgrade.await.unwrap().unwrap().applied,
        (10..=migrate::latest_version()).collect::<Vec<_>>()
    );
    let summary = push.await.unwrap().unwrap();
    assert_eq!((summary.sent, summary.failed), (12, 0));
    assert!(summary.gave_way >= 1);
    let stored = snapshot(&db).await;
    assert_statistics_exact(&stored);
    // The server wrote no session vectors (it started on a schema without their table).
    let mut reference = local_reference(&[&early, &late]).await;
    reference.session_vectors.clear();
    stored.assert_same_as(&reference);
    assert_no_duplicates(&db).await;
    server.stop().await;
}

#[tokio::test]
async fn a_server_restarted_mid_push_is_resumed_by_the_client() {
    let dir = scratch("restart");
    write_sessions(&dir, 0x42, 20, 10, "restartword");
    let (mut settings, db) = fresh_db().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    settings.server.listen = format!("127.0.0.1:{port}").parse().unwrap();
    let settings = team(settings);
    let server = TestServer::start(settings.clone(), db.clone()).await;
    let pusher = client(&server, ALICE);
    let logs = logs_under(&dir);
    let push = tokio::spawn(async move { push::push_logs(&pusher, &logs, 2048, false).await });
    wait_for(&db, |(_, events)| events > 100).await;
    server.stop().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let server = TestServer::start(settings, db.clone()).await;
    let summary = push.await.unwrap().unwrap();
    assert_eq!(summary.failed, 0);
    let pushed = snapshot(&db).await;
    assert_statistics_exact(&pushed);
    pushed.assert_same_as(&local_reference(&[&dir]).await);
    assert_no_duplicates(&db).await;
    server.stop().await;
}

#[tokio::test]
async fn tokens_read_and_write_only_what_their_scopes_and_sources_allow() {
    let (a, b) = (scratch("scope-a"), scratch("scope-b"));
    write_sessions(&a, 0xaa, 7, 3, "alphaword");
    write_sessions(&b, 0xbb, 9, 3, "betaword");
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db).await;
    push::push_logs(&client(&server, ALICE), &logs_under(&a), 1 << 20, false)
        .await
        .unwrap();
    push::push_logs(&client(&server, BOB), &logs_under(&b), 1 << 20, false)
        .await
        .unwrap();
    let append = |token: &str, source: Option<&str>| {
        let mut url = format!(
            "{}/ingest/v1/append?harness=claude-code&path=/x/0000-1111.jsonl&offset=0",
            server.base
        );
        if let Some(source) = source {
            url.push_str(&format!("&source={source}"));
        }
        let bearer = format!("Bearer {token}");
        let line =
            json!({"type": "user", "sessionId": "0000-1111", "timestamp": "2026-06-01T00:00:00Z",
            "message": {"role": "user", "content": "one more alice session"}})
            .to_string()
                + "\n";
        async move { send("POST", &url, &[("authorization", bearer.as_str())], &line).await }
    };
    // A reader cannot ingest; a laptop cannot write as another source, nor read.
    let refused = append(READER, None).await;
    assert_eq!(refused.status, 403);
    assert_eq!(refused.json()["error"], "forbidden");
    assert_eq!(append(ALICE, Some("bob")).await.status, 403);
    assert_eq!(append(ALICE, Some("alice")).await.status, 200);
    let tools = send(
        "POST",
        &server.mcp_url,
        &[
            ("authorization", &format!("Bearer {BOB}")),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string(),
    )
    .await;
    assert_eq!(tools.status, 403);
    // Refusals are counted by method and outcome, never by who; a token's name shows (as the
    // source it pushes as) only to a token with the metrics scope, and the token never does.
    let metrics = send(
        "GET",
        &format!("{}/metrics", server.base),
        &[("authorization", &format!("Bearer {PROMETHEUS}"))],
        "",
    )
    .await;
    let forbidden = ["method=\"static\"", "outcome=\"forbidden\""];
    assert!(
        common::metric_sum(&metrics.body, "moraine_mcp_auth_requests_total", &forbidden) >= 1.0,
        "{}",
        metrics.body
    );
    assert!(!metrics.body.contains(READER));
    let anonymous = send("GET", &format!("{}/metrics", server.base), &[], "").await;
    assert_eq!(anonymous.status, 200);
    assert!(!anonymous.body.contains("alice-laptop"));
    assert!(!anonymous.body.contains("token="));

    // A reader of alice's sessions: bob's do not exist for it.
    let mut limited = Mcp::modern(&server.mcp_url, Some(ALICE_READER)).await;
    let mut everyone = Mcp::modern(&server.mcp_url, Some(READER)).await;
    let found = limited
        .ok(
            "search_sessions",
            json!({"query": "betaword", "n_hits": 50}),
        )
        .await;
    assert_eq!(found["data"]["result_count"], 0);
    assert_eq!(found["data"]["truncated"], false);
    let found = limited
        .ok(
            "search_sessions",
            json!({"query": "build service", "n_hits": 50}),
        )
        .await;
    assert!(
        found["data"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["session"]["source"] == "alice")
    );
    let window = json!({"start_datetime": "2026-01-01T00:00:00Z", "end_datetime": "2027-01-01T00:00:00Z", "limit": 3});
    let mut seen = Vec::new();
    let mut page = limited.ok("list_sessions", window.clone()).await;
    loop {
        for item in page["data"]["sessions"].as_array().unwrap() {
            assert_eq!(item["session"]["source"], "alice");
            seen.push(item["id"].as_str().unwrap().to_owned());
        }
        let Some(cursor) = page["data"]["next_cursor"].as_str() else {
            break;
        };
        let mut next = window.clone();
        next["cursor"] = json!(cursor);
        // The cursor is bound to the caller: another token cannot use it.
        let (code, _) = everyone.err("list_sessions", next.clone()).await;
        assert_eq!(code, "invalid_request");
        page = limited.ok("list_sessions", next).await;
    }
    // alice's 7 pushed sessions, and the one of the line sent above.
    assert_eq!(seen.len(), 8);
    let all = everyone
        .ok("list_sessions", json!({"start_datetime": "2026-01-01T00:00:00Z", "end_datetime": "2027-01-01T00:00:00Z", "limit": 50}))
        .await;
    assert_eq!(all["data"]["result_count"], 17);
    let bobs = all["data"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session"]["source"] == "bob")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, _) = limited.err("open", json!({"id": bobs})).await;
    assert_eq!(code, "not_found");
    let (code, _) = limited
        .err(
            "search_sessions",
            json!({"query": "betaword", "within_id": bobs}),
        )
        .await;
    assert_eq!(code, "not_found");
    // Traversal from alice's sessions never leads to bob's.
    for id in &seen {
        let opened = limited.ok("open", json!({"id": id})).await;
        for link in ["previous_session_id", "next_session_id"] {
            if let Some(neighbour) = opened["data"]["traversal"][link].as_str() {
                assert!(seen.iter().any(|s| s == neighbour), "{link} leads outside");
            }
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn appends_are_idempotent_ordered_and_bounded() {
    let dir = scratch("protocol");
    write_sessions(&dir, 0x43, 1, 4, "orderword");
    let log = logs_under(&dir).remove(0);
    let bytes = std::fs::read(&log.path).unwrap();
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    let bearer = format!("Bearer {ALICE}");
    let url = |offset: usize| {
        format!(
            "{}/ingest/v1/append?harness=claude-code&path={}&offset={offset}",
            server.base,
            log.path.display()
        )
    };
    let post = |offset: usize, body: Vec<u8>| {
        let url = url(offset);
        let bearer = bearer.clone();
        async move {
            let body = String::from_utf8(body).unwrap();
            send("POST", &url, &[("authorization", bearer.as_str())], &body).await
        }
    };
    let half = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let first = post(0, bytes[..half].to_vec()).await;
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(first.json()["received"], half);
    // Resent: nothing written.
    let again = post(0, bytes[..half].to_vec()).await;
    assert_eq!(again.json()["duplicate"], true);
    // Out of order: refused, naming where the server stands.
    let gap = post(half + 10, bytes[half + 10..].to_vec()).await;
    assert_eq!(gap.status, 409);
    assert_eq!(gap.json()["error"], "offset_mismatch");
    assert_eq!(gap.json()["received"], half);
    // Different bytes where stored ones are: the log was replaced.
    let mut other = bytes[..half].to_vec();
    other[5] ^= 1;
    let mismatch = post(0, other).await;
    assert_eq!(mismatch.status, 409);
    assert_eq!(mismatch.json()["error"], "content_mismatch");
    // An overlapping resend carries on where the server stands.
    let rest = post(1, bytes[1..].to_vec()).await;
    assert_eq!(rest.status, 200, "{rest:?}");
    assert_eq!(rest.json()["received"], bytes.len());

    // A body cut off mid-stream commits nothing.
    let (settings2, db2) = fresh_db().await;
    let cut = TestServer::start(team(settings2), db2.clone()).await;
    let addr = cut.base.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /ingest/v1/append?harness=claude-code&path={}&offset=0 HTTP/1.1\r\nHost: {addr}\r\n\
         Authorization: {bearer}\r\nContent-Length: {}\r\n\r\n",
        log.path.display(),
        bytes.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&bytes[..bytes.len() / 2]).await.unwrap();
    drop(stream);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stored: u64 = db2
        .read("t", "SELECT count() FROM events")
        .fetch_optional(&db2, db2.default_deadline())
        .await
        .unwrap()
        .unwrap();
    let checkpoints: u64 = db2
        .read("t", "SELECT count() FROM ingest_checkpoints")
        .fetch_optional(&db2, db2.default_deadline())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((stored, checkpoints), (0, 0));

    // Over the size limit, before or after decoding: 413.
    let limit = moraine_mcp::config::IngestConfig::default().max_request_bytes;
    let huge = vec![b'x'; limit + 1024 * 1024];
    let mut raw = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /ingest/v1/append?harness=claude-code&path=/x/y.jsonl&offset=0 HTTP/1.1\r\nHost: {addr}\r\n\
         Authorization: {bearer}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        huge.len()
    );
    raw.write_all(head.as_bytes()).await.unwrap();
    let _ = raw.write_all(&huge).await;
    let mut answer = Vec::new();
    let _ = raw.read_to_end(&mut answer).await;
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 413"));
    // Within the limit, any size is taken (a framework's smaller default does not apply).
    let big = format!("{}\n", "x".repeat(limit - 1024 * 1024));
    let taken = send(
        "POST",
        &format!(
            "{}/ingest/v1/append?harness=claude-code&path=/x/big.jsonl&offset=0",
            cut.base
        ),
        &[("authorization", bearer.as_str())],
        &big,
    )
    .await;
    assert_eq!(taken.status, 200, "{}", taken.body);
    assert_eq!(taken.json()["received"], big.len());
    cut.stop().await;
    server.stop().await;
}

#[tokio::test]
async fn the_server_keeps_pushed_logs_and_reindex_rebuilds_them_with_the_same_ids() {
    let dir = scratch("archive");
    write_sessions(&dir, 0x44, 6, 5, "archiveword");
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings.clone()), db.clone()).await;
    let alice = client(&server, ALICE);
    push::push_logs(&alice, &logs_under(&dir), 4096, false)
        .await
        .unwrap();
    let pushed = snapshot(&db).await;

    // The harness prunes its logs: the server still has every session, and a push of what is
    // left changes nothing there.
    let logs = logs_under(&dir);
    for log in &logs[..3] {
        std::fs::remove_file(&log.path).unwrap();
    }
    let after_prune = push::push_logs(&alice, &logs_under(&dir), 4096, false)
        .await
        .unwrap();
    assert_eq!(after_prune.events, 0);
    assert_eq!(snapshot(&db).await, pushed);

    // Statistics an earlier cut write left wrong are made exact by a rebuild too.
    for sql in [
        "INSERT INTO corpus_stats VALUES (1, 500, 12345)",
        "INSERT INTO term_df SELECT term, 2, 3 FROM postings LIMIT 7",
    ] {
        db.write("t", sql)
            .setting("insert_deduplicate", "0")
            .execute(&db, db.default_deadline())
            .await
            .unwrap();
    }
    // Everything rebuilt from the archive: the same rows and IDs.
    let config = team(settings).validate().unwrap();
    let scratch_dir = scratch("archive-reindex");
    let summary = moraine_mcp::ingest::reindex::run(
        &config,
        &db,
        &moraine_mcp::ingest::reindex::Selection::default(),
        &scratch_dir,
        false,
    )
    .await
    .unwrap();
    assert_eq!((summary.logs, summary.from_archive), (6, 6));
    assert!(summary.missing.is_empty());
    let rebuilt = snapshot(&db).await;
    assert_statistics_exact(&rebuilt);
    assert_eq!(rebuilt, pushed);
    assert_no_duplicates(&db).await;
    server.stop().await;
}

/// Counts of sessions and events stored.
async fn counts(db: &Db) -> (u64, u64) {
    db.read(
        "t",
        "SELECT toUInt64(assumeNotNull((SELECT count() FROM sessions FINAL))), \
                toUInt64(assumeNotNull((SELECT count() FROM events)))",
    )
    .fetch_optional(db, db.default_deadline())
    .await
    .unwrap()
    .unwrap()
}

/// Waits until the counts of sessions and events stored satisfy `what`. Polled often: tests
/// stop a push part-way through.
async fn wait_for(db: &Db, what: impl Fn((u64, u64)) -> bool) {
    let started = Instant::now();
    while !what(counts(db).await) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not pushed in time: {:?}",
            counts(db).await
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn push_watch_follows_appends_and_new_files_until_stopped() {
    let dir = scratch("watch");
    write_sessions(&dir, 0x45, 2, 3, "watchword");
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    let mut child = Command::new(BIN)
        .args([
            "push",
            "--watch",
            "--interval",
            "1",
            "--server",
            &server.base,
            "--token",
            ALICE,
        ])
        .arg(&dir)
        .env("HOME", &dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&db, |(sessions, _)| sessions == 2).await;
    let (_, before) = counts(&db).await;
    // An append to a known log, and a new log.
    let log = logs_under(&dir).remove(0);
    let mut text = std::fs::read_to_string(&log.path).unwrap();
    let extra = json!({"type": "user", "sessionId": "x", "timestamp": "2026-05-01T12:00:00Z",
        "message": {"role": "user", "content": "one more watchword question"}});
    text.push_str(&format!("{extra}\n"));
    std::fs::write(&log.path, text).unwrap();
    write_sessions(&dir.join("more"), 0x46, 1, 2, "watchword");
    wait_for(&db, |(sessions, events)| {
        sessions == 3 && events > before + 1
    })
    .await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
    server.stop().await;
}

#[tokio::test]
async fn a_replaced_log_is_sent_again_and_replaces_what_it_contributed() {
    let dir = scratch("replaced");
    write_sessions(&dir, 0x47, 3, 6, "firstword");
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    let alice = client(&server, ALICE);
    push::push_logs(&alice, &logs_under(&dir), 4096, false)
        .await
        .unwrap();
    // The harness rewrote one log: shorter, and different from its first byte on.
    let log = logs_under(&dir).remove(0);
    let text = std::fs::read_to_string(&log.path).unwrap();
    let rewritten: String = text
        .lines()
        .take(5)
        .map(|line| line.replace("firstword", "secondword") + "\n")
        .collect();
    std::fs::write(&log.path, rewritten).unwrap();
    let again = push::push_logs(&alice, &logs_under(&dir), 4096, false)
        .await
        .unwrap();
    assert_eq!((again.replaced, again.unchanged, again.failed), (1, 2, 0));
    let pushed = snapshot(&db).await;
    assert_statistics_exact(&pushed);
    pushed.assert_same_as(&local_reference(&[&dir]).await);
    // The old generation of the archive is gone; the new one is complete.
    let generations: Vec<(u64, u32)> = db
        .read(
            "t",
            "SELECT file_key, max(generation) FROM raw_chunks FINAL GROUP BY file_key HAVING min(generation) != max(generation)",
        )
        .fetch_all(&db, db.default_deadline())
        .await
        .unwrap();
    assert!(
        generations.is_empty(),
        "stale archive generations: {generations:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn gzip_bodies_are_accepted_and_unknown_encodings_refused() {
    use std::io::Write as _;
    let dir = scratch("gzip");
    write_sessions(&dir, 0x48, 1, 3, "gzipword");
    let log = logs_under(&dir).remove(0);
    let bytes = std::fs::read(&log.path).unwrap();
    // Two gzip members, as `cat a.gz b.gz` makes: both are read.
    let member = |part: &[u8]| {
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(part).unwrap();
        gzip.finish().unwrap()
    };
    let half = bytes.len() / 2;
    let gzip = [member(&bytes[..half]), member(&bytes[half..])].concat();
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    let url = format!(
        "{}/ingest/v1/append?harness=claude-code&path={}&offset=0",
        server.base,
        log.path.display()
    );
    let request = axum::http::Request::post(&url)
        .header("authorization", format!("Bearer {ALICE}"))
        .header("content-encoding", "gzip")
        .body(http_body_util::Full::new(bytes::Bytes::from(gzip)))
        .unwrap();
    let response = common::http().request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(snapshot(&db).await, local_reference(&[&dir]).await);
    // Bytes after the members that are no gzip: refused, not silently dropped.
    let mut damaged = member(b"{}\n");
    damaged.extend_from_slice(b"not gzip at all");
    let request = axum::http::Request::post(url.replace(".jsonl", "-2.jsonl"))
        .header("authorization", format!("Bearer {ALICE}"))
        .header("content-encoding", "gzip")
        .body(http_body_util::Full::new(bytes::Bytes::from(damaged)))
        .unwrap();
    let response = common::http().request(request).await.unwrap();
    assert_eq!(response.status(), 400);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_batch_writes_many_logs_at_once_and_refuses_one_log_alone() {
    let dir = scratch("batch");
    write_sessions(&dir, 0x45, 3, 3, "batchword");
    let logs = logs_under(&dir);
    let texts: Vec<String> = logs
        .iter()
        .map(|l| std::fs::read_to_string(&l.path).unwrap())
        .collect();
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    let bearer = format!("Bearer {ALICE}");
    let post = |body: String| {
        let url = format!("{}/ingest/v1/batch", server.base);
        let bearer = bearer.clone();
        async move { send("POST", &url, &[("authorization", bearer.as_str())], &body).await }
    };
    // One head line naming each part, then the parts' bytes.
    // Parts are (log, from, to); `to` 0 means the end.
    let batch = |parts: &[(usize, usize, usize)]| {
        let range = |&(i, from, to): &(usize, usize, usize)| {
            &texts[i][from..if to == 0 { texts[i].len() } else { to }]
        };
        let head: Vec<_> = parts
            .iter()
            .map(|part| {
                json!({
                    "harness": "claude-code",
                    "path": logs[part.0].path.display().to_string(),
                    "offset": part.1,
                    "length": range(part).len(),
                })
            })
            .collect();
        let mut body = json!({ "logs": head }).to_string();
        body.push('\n');
        for part in parts {
            body.push_str(range(part));
        }
        body
    };
    let line = texts[0].find('\n').unwrap() + 1;
    let first = post(batch(&[(0, 0, line)])).await;
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(first.json()["source"], "alice");
    assert_eq!(first.json()["logs"][0]["received"], line);

    // A gap in log 0 and log 1 named twice are refused; logs 1 and 2 are written anyway.
    let mixed = post(batch(&[(0, line + 10, 0), (1, 0, 0), (1, 0, 0), (2, 0, 0)])).await;
    assert_eq!(mixed.status, 200, "{mixed:?}");
    let answer = mixed.json();
    let outcomes = answer["logs"].as_array().unwrap();
    assert_eq!(outcomes.len(), 4);
    assert_eq!(outcomes[0]["error"], "offset_mismatch");
    assert_eq!(outcomes[0]["received"], line);
    assert_eq!(outcomes[1]["received"], texts[1].len());
    assert!(outcomes[1]["events"].as_u64().unwrap() > 0);
    assert_eq!(outcomes[2]["error"], "invalid_request");
    assert!(
        outcomes[2]["message"]
            .as_str()
            .unwrap()
            .contains("named twice")
    );
    assert_eq!(outcomes[3]["received"], texts[2].len());

    let rest = post(batch(&[(0, line, 0)])).await;
    assert_eq!(
        rest.json()["logs"][0]["received"],
        texts[0].len(),
        "{rest:?}"
    );

    // Everything sent once, in three batches, is what a local ingest of the files stores.
    let reference = local_reference(&[&dir]).await;
    let pushed = snapshot(&db).await;
    assert_statistics_exact(&pushed);
    assert_eq!(pushed, reference);

    // Resent: every log is a duplicate; nothing is written.
    let again = post(batch(&[(0, 0, 0), (1, 0, 0), (2, 0, 0)])).await;
    let answer = again.json();
    assert!(
        answer["logs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["duplicate"] == true),
        "{answer}"
    );
    assert_eq!(snapshot(&db).await, reference);

    // A body that is not a batch is refused as a whole.
    for bad in [
        "no head line".to_owned(),
        "{\"logs\":[]}\n".to_owned(),
        batch(&[(0, 0, 0)])[..40].to_owned(),
        format!("{}trailing", batch(&[(0, 0, 0)])),
    ] {
        let refused = post(bad).await;
        assert_eq!(refused.status, 400, "{refused:?}");
        assert_eq!(refused.json()["error"], "invalid_request");
    }
    server.stop().await;
}

#[tokio::test]
async fn logs_not_named_by_session_are_identified_by_content_when_pushed_in_pieces() {
    // Three sessions exported under one file name, each in its own directory.
    let written = scratch("named-src");
    write_sessions(&written, 0xe7, 3, 8, "exportword");
    let project = written.join("projects").join("-home-dev-src-team");
    let mut originals: Vec<PathBuf> = std::fs::read_dir(&project)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    originals.sort();
    let dir = scratch("named");
    for (i, original) in originals.iter().enumerate() {
        let repo = dir.join(format!("repo-{i}"));
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::copy(original, repo.join("claude-session.jsonl")).unwrap();
    }
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    let logs = logs_under(&dir);
    assert_eq!(logs.len(), 3);
    assert!(logs.iter().all(|log| log.size > 3 * 2048));
    // Small chunks: every log arrives in several requests, and each continuation must be
    // put in the session its first request named.
    let pushed = push::push_logs(&client(&server, ALICE), &logs, 2048, false)
        .await
        .unwrap();
    assert_eq!((pushed.sent, pushed.failed), (3, 0));
    let stored = snapshot(&db).await;
    assert_eq!(stored, local_reference(&[&dir]).await);
    let natives: Vec<String> = db
        .read(
            "t",
            "SELECT native_id FROM sessions FINAL ORDER BY native_id",
        )
        .fetch_all(&db, db.default_deadline())
        .await
        .unwrap();
    let expected: Vec<String> = originals
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(natives, expected);
    server.stop().await;
}

#[tokio::test]
async fn every_format_family_pushed_in_pieces_stores_what_a_local_ingest_stores() {
    let formats = scratch("formats");
    common::copy_formats(&formats);
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    let logs = logs_under(&formats);
    // The TypeScript Codex CLI's whole-file JSON is among them, sent as the lines it stands for.
    assert!(
        logs.iter()
            .any(|l| l.path.extension().is_some_and(|e| e == "json"))
    );
    // So are the sessions of the SQLite stores (Cursor's and OpenCode's), sent as renderings.
    for store in ["state.vscdb#", "opencode.db#"] {
        assert!(
            logs.iter()
                .any(|l| l.path.to_string_lossy().contains(store)),
            "{store}"
        );
    }
    let pushed = push::push_logs(&client(&server, ALICE), &logs, 1024, false)
        .await
        .unwrap();
    assert_eq!((pushed.sent, pushed.failed), (logs.len(), 0));
    let stored = snapshot(&db).await;
    stored.assert_same_as(&local_reference(&[&formats]).await);
    assert_statistics_exact(&stored);
    assert_no_duplicates(&db).await;
    server.stop().await;
}

#[tokio::test]
async fn protected_metrics_answer_only_a_metrics_token() {
    let (mut settings, db) = fresh_db().await;
    settings = team(settings);
    settings.auth.protect_metrics = true;
    let server = TestServer::start(settings, db).await;
    let url = format!("{}/metrics", server.base);
    let bearer = |token: &str| format!("Bearer {token}");
    assert_eq!(send("GET", &url, &[], "").await.status, 401);
    let reader = bearer(READER);
    assert_eq!(
        send("GET", &url, &[("authorization", &reader)], "")
            .await
            .status,
        403
    );
    let prometheus = bearer(PROMETHEUS);
    let allowed = send("GET", &url, &[("authorization", &prometheus)], "").await;
    assert_eq!(allowed.status, 200);
    assert!(
        allowed
            .body
            .contains("moraine_mcp_auth_requests_total{method=\"static\",outcome=\"forbidden\"} 1"),
        "{}",
        allowed.body
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_push_while_searches_run_gives_way_to_them_and_stores_everything() {
    let (during, after) = (scratch("paced-during"), scratch("paced-after"));
    write_sessions(&during, 0xface, 12, 6, "pacedword");
    write_sessions(&after, 0xfade, 4, 6, "quietword");
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    let metrics_url = format!("{}/metrics", server.base);
    let counter = |page: &str, name: &str| common::metric_sum(page, name, &[]);
    let paced = |page: &str| counter(page, "moraine_mcp_ingest_paced_writes_total");
    assert_eq!(paced(&send("GET", &metrics_url, &[], "").await.body), 0.0);

    // Three clients search back to back, so a call is always running while the logs go in.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (started_tx, mut started) = tokio::sync::mpsc::channel::<()>(3);
    let mut searchers = Vec::new();
    for _ in 0..3 {
        let (url, stop, started_tx) = (server.mcp_url.clone(), stop.clone(), started_tx.clone());
        searchers.push(tokio::spawn(async move {
            let mut reader = Mcp::modern(&url, Some(READER)).await;
            let mut calls = 0u32;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                reader
                    .ok("search_sessions", json!({"query": "pacedword session"}))
                    .await;
                calls += 1;
                if calls == 1 {
                    started_tx.send(()).await.unwrap();
                }
            }
            calls
        }));
    }
    for _ in 0..3 {
        started.recv().await.unwrap();
    }
    let alice = client(&server, ALICE);
    let pushed = push::push_logs(&alice, &logs_under(&during), 16 * 1024, false)
        .await
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for searcher in searchers {
        assert!(searcher.await.unwrap() > 0);
    }
    assert_eq!((pushed.sent, pushed.failed), (12, 0));
    let page = send("GET", &metrics_url, &[], "").await.body;
    let paced_during = paced(&page);
    assert!(paced_during >= 1.0, "no write gave way to the searches");
    assert!(counter(&page, "moraine_mcp_ingest_paced_seconds_total") > 0.0);

    // Giving way loses nothing: the store is what a local ingest of the same logs stores.
    let stored = snapshot(&db).await;
    assert_statistics_exact(&stored);
    assert_eq!(stored, local_reference(&[&during]).await);
    assert_no_duplicates(&db).await;

    // With no call running (the last ended well over the quiet time ago), writes go at once.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let quiet = push::push_logs(&alice, &logs_under(&after), 16 * 1024, false)
        .await
        .unwrap();
    assert_eq!((quiet.sent, quiet.failed), (4, 0));
    let page = send("GET", &metrics_url, &[], "").await.body;
    assert_eq!(paced(&page), paced_during);
    server.stop().await;
}

/// Sessions as the reader with `token` sees them: source, title and ID → event count.
/// A log another laptop named first, before it held a whole event, is that laptop's: a log of
/// the same session with events from elsewhere is written apart, so the first laptop's
/// `replace` never retracts it.
#[tokio::test]
async fn a_session_another_laptop_named_first_without_an_event_is_not_shared() {
    let (a, b) = (scratch("named-first-a"), scratch("named-first-b"));
    write_sessions(&a, 0x0b2, 1, 3, "deltaword");
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    common::copy_tree(&a, &b, &mut |_| {});
    let project = b.join("projects").join("-home-dev-src-team");
    let bobs_log = first_log(&project);
    let session_id = bobs_log.file_stem().unwrap().to_string_lossy().into_owned();
    // Only a title: a checkpoint, no event.
    let title = json!({"type": "custom-title", "customTitle": "bob's", "sessionId": session_id});
    std::fs::write(&bobs_log, format!("{title}\n")).unwrap();
    let bob = client(&server, BOB);
    // Named as a Claude Code log: nothing in it says so yet.
    let (partial, problems) = files::from_paths(
        std::slice::from_ref(&b),
        Some(moraine_mcp::vocab::Harness::ClaudeCode),
        None,
    );
    assert!(problems.is_empty(), "{problems:?}");
    let named = push::push_logs(&bob, &partial, 1 << 20, false)
        .await
        .unwrap();
    assert_eq!((named.sent, named.failed), (1, 0));
    let alice = client(&server, ALICE);
    push::push_logs(&alice, &logs_under(&a), 1 << 20, false)
        .await
        .unwrap();
    let before = sessions_seen(&server, ALICE_READER).await;
    assert_eq!(before.len(), 1, "{before:?}");
    // Bob's log is replaced by other content: his push replaces what that log contributed.
    let line = json!({"type": "user", "sessionId": session_id, "timestamp": "2026-05-21T00:00:00.000Z",
        "message": {"role": "user", "content": "bobword only bob wrote"}});
    std::fs::write(&bobs_log, format!("{line}\n")).unwrap();
    let replaced = push::push_logs(&bob, &logs_under(&b), 1 << 20, false)
        .await
        .unwrap();
    assert_eq!(replaced.failed, 0);
    // Alice's session is whole.
    assert_eq!(sessions_seen(&server, ALICE_READER).await, before);
    assert_statistics_exact(&snapshot(&db).await);
    assert_no_duplicates(&db).await;
    server.stop().await;
}

/// A session ID is whatever a log says: one that spells another source's apart key (the ID,
/// a NUL, the source) names a session of its own, never the one the other source's copies
/// are written apart to.
#[tokio::test]
async fn a_session_id_never_names_where_another_sources_copy_is_written_apart() {
    let (log, session_id) = codex_log();
    let (a, b) = (scratch("apart-id-a"), scratch("apart-id-b"));
    for dir in [&a, &b] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("rollout.jsonl"), &log).unwrap();
    }
    // Bob's second log says its session is the ID, a NUL and "alice".
    let spelled = log.replacen(session_id, &format!("{session_id}\\u0000alice"), 1);
    assert_ne!(spelled, log);
    std::fs::write(b.join("spelled.jsonl"), &spelled).unwrap();
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    let bob = client(&server, BOB);
    assert_eq!(push_codex(&bob, &b).await, (2, 0));
    // Alice's copy of Bob's session is written apart.
    let alice = client(&server, ALICE);
    assert_eq!(push_codex(&alice, &a).await, (1, 0));
    let theirs = sessions_seen(&server, ALICE_READER).await;
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    let events = *theirs.values().next().unwrap();
    assert!(theirs.keys().all(|k| k.starts_with("alice ")), "{theirs:?}");
    // Bob's spelled log is replaced: Alice's session stays whole.
    cut_to_first_line_and_push(&bob, &b, "spelled.jsonl").await;
    assert_eq!(sessions_seen(&server, ALICE_READER).await, theirs);
    let everyone = sessions_seen(&server, READER).await;
    assert_eq!(everyone.len(), 3, "{everyone:?}");
    assert!(
        everyone.values().filter(|n| **n == events).count() >= 2,
        "{everyone:?}"
    );
    assert_statistics_exact(&snapshot(&db).await);
    assert_no_duplicates(&db).await;
    server.stop().await;
}

/// A log of a session its source already stored, with other content, is a session of its own
/// under that one (`X/<file stem>`); when another source already stored a session of that ID,
/// the log is written apart, never into the other source's session.
#[tokio::test]
async fn a_session_under_anothers_is_never_written_into_a_session_another_source_named() {
    let (log, session_id) = codex_log();
    let (a, b) = (scratch("under-a"), scratch("under-b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(a.join("first.jsonl"), &log).unwrap();
    // Bob's log says its session is the one Alice's second log of the session will be under.
    let spelled = log.replacen(session_id, &format!("{session_id}/second"), 1);
    std::fs::write(b.join("spelled.jsonl"), &spelled).unwrap();
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    let (alice, bob) = (client(&server, ALICE), client(&server, BOB));
    assert_eq!(push_codex(&alice, &a).await, (1, 0));
    assert_eq!(push_codex(&bob, &b).await, (1, 0));
    // Alice's second log of the session, with other content (its last line changed), pushed
    // on its own: only the server knows it is not the session's first log.
    let mut lines: Vec<&str> = log.lines().collect();
    let last = lines.pop().unwrap().replace("\"type\"", "\"type\" ");
    let elsewhere = scratch("under-a2");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(
        elsewhere.join("second.jsonl"),
        lines.join("\n") + "\n" + &last + "\n",
    )
    .unwrap();
    assert_eq!(push_codex(&alice, &elsewhere).await, (1, 0));
    let theirs = sessions_seen(&server, ALICE_READER).await;
    assert_eq!(theirs.len(), 2, "{theirs:?}");
    assert_eq!(sessions_seen(&server, READER).await.len(), 3);
    // Bob's log is replaced: Alice's sessions stay whole.
    cut_to_first_line_and_push(&bob, &b, "spelled.jsonl").await;
    assert_eq!(sessions_seen(&server, ALICE_READER).await, theirs);
    assert_statistics_exact(&snapshot(&db).await);
    assert_no_duplicates(&db).await;
    server.stop().await;
}

/// A source whose copy of another's session was written apart under the old form of the apart
/// key (the session ID, a NUL and the source, as a session ID spelling it gives too) keeps
/// writing its copies there while it alone holds that session.
#[tokio::test]
async fn copies_written_apart_under_the_old_key_stay_together() {
    let (log, session_id) = codex_log();
    let (a, b, c) = (
        scratch("old-key-a"),
        scratch("old-key-b"),
        scratch("old-key-c"),
    );
    for dir in [&a, &b, &c] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(b.join("x.jsonl"), &log).unwrap();
    // Alice's earlier copy, at the old apart key.
    let old = log.replacen(session_id, &format!("{session_id}\\u0000alice"), 1);
    std::fs::write(a.join("old.jsonl"), &old).unwrap();
    std::fs::write(c.join("x.jsonl"), &log).unwrap();
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    for (token, dir) in [(BOB, &b), (ALICE, &a), (ALICE, &c)] {
        assert_eq!(push_codex(&client(&server, token), dir).await, (1, 0));
    }
    // Alice's new copy joined her old one: one session of hers.
    assert_eq!(sessions_seen(&server, ALICE_READER).await.len(), 1);
    assert_eq!(sessions_seen(&server, READER).await.len(), 2);
    assert_statistics_exact(&snapshot(&db).await);
    server.stop().await;
}

async fn sessions_seen(
    server: &TestServer,
    token: &str,
) -> std::collections::BTreeMap<String, u64> {
    let mut mcp = Mcp::modern(&server.mcp_url, Some(token)).await;
    let listed = mcp
        .ok(
            "list_sessions",
            json!({"start_datetime": "2026-01-01T00:00:00Z", "end_datetime": "2027-01-01T00:00:00Z", "limit": 50}),
        )
        .await;
    let mut seen = std::collections::BTreeMap::new();
    for listed in listed["data"]["sessions"].as_array().unwrap() {
        let session = &listed["session"];
        // What the session holds, as open reads it (not only what its row says).
        let opened = mcp.ok("open", json!({"id": listed["id"]})).await;
        let events: u64 = opened["data"]["turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["event_count"].as_u64().unwrap())
            .sum();
        assert_eq!(
            events,
            session["event_count"].as_u64().unwrap(),
            "{session}"
        );
        seen.insert(
            format!(
                "{} {} ({})",
                session["source"].as_str().unwrap(),
                session["title"].as_str().unwrap(),
                listed["id"].as_str().unwrap()
            ),
            events,
        );
    }
    seen
}

#[tokio::test]
async fn a_laptop_never_overwrites_or_shrinks_anothers_session() {
    let (a, b) = (scratch("own-a"), scratch("own-b"));
    write_sessions(&a, 0x0a1, 3, 3, "alphaword");
    let (settings, db) = fresh_db().await;
    let mut settings = team(settings);
    let mut bob_reader = TokenConfig::reader("bob-reader", "bob-reader-token-0123456789");
    bob_reader.read_sources = Some(vec!["bob".into()]);
    settings.auth.tokens.push(bob_reader);
    let server = TestServer::start(settings, db.clone()).await;
    let alice = client(&server, ALICE);
    push::push_logs(&alice, &logs_under(&a), 1 << 20, false)
        .await
        .unwrap();
    let before = sessions_seen(&server, ALICE_READER).await;
    assert_eq!(before.len(), 3, "{before:?}");

    // Bob's laptop holds a copy of the same three logs (two machines syncing one home, or
    // IDs copied on purpose), and one of them also under another name; it pushes them, then
    // truncated copies.
    common::copy_tree(&a, &b, &mut |_| {});
    let project = b.join("projects").join("-home-dev-src-team");
    let first = first_log(&project);
    let exported = scratch("own-b-exported");
    std::fs::copy(&first, exported.join("exported.jsonl")).unwrap();
    let bob = client(&server, BOB);
    push::push_logs(&bob, &logs_under(&b), 1 << 20, false)
        .await
        .unwrap();
    push::push_logs(&bob, &logs_under(&exported), 1 << 20, false)
        .await
        .unwrap();
    for entry in std::fs::read_dir(&project).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let kept: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, kept).unwrap();
    }
    let truncated = push::push_logs(&bob, &logs_under(&b), 1 << 20, false)
        .await
        .unwrap();
    assert_eq!(truncated.failed, 0);

    // Alice's sessions are hers, whole, as her own reader sees them.
    assert_eq!(sessions_seen(&server, ALICE_READER).await, before);
    let mut alice_reader = Mcp::modern(&server.mcp_url, Some(ALICE_READER)).await;
    let found = alice_reader
        .ok(
            "search_sessions",
            json!({"query": "alphaword answer", "n_hits": 50}),
        )
        .await;
    let sessions: std::collections::HashSet<&str> = found["data"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["session"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions.len(), 3);
    // Bob's copies are his own sessions: stored apart, as he pushed them last.
    let bobs = sessions_seen(&server, "bob-reader-token-0123456789").await;
    assert_eq!(bobs.len(), 3, "{bobs:?}");
    assert!(bobs.keys().all(|k| k.starts_with("bob ")), "{bobs:?}");

    // Alice goes on working: her session grows, Bob's copy does not.
    let original = a
        .join("projects")
        .join("-home-dev-src-team")
        .join(first.file_name().unwrap());
    let session_id = first.file_stem().unwrap().to_string_lossy().into_owned();
    let line = json!({"type": "user", "sessionId": session_id, "timestamp": "2026-05-20T00:00:00.000Z",
        "message": {"role": "user", "content": "gammaword follow-up only alice wrote"}});
    let mut text = std::fs::read_to_string(&original).unwrap();
    text.push_str(&format!("{line}\n"));
    std::fs::write(&original, text).unwrap();
    push::push_logs(&alice, &logs_under(&a), 1 << 20, false)
        .await
        .unwrap();
    let after = sessions_seen(&server, ALICE_READER).await;
    assert_eq!(
        after.values().sum::<u64>(),
        before.values().sum::<u64>() + 1
    );
    assert_eq!(
        sessions_seen(&server, "bob-reader-token-0123456789").await,
        bobs
    );
    let mut bob_reader = Mcp::modern(&server.mcp_url, Some("bob-reader-token-0123456789")).await;
    let leaked = bob_reader
        .ok("search_sessions", json!({"query": "gammaword"}))
        .await;
    assert_eq!(leaked["data"]["result_count"], 0);
    assert_statistics_exact(&snapshot(&db).await);
    assert_no_duplicates(&db).await;
    // Rebuilt from the archive, every log goes back into the session it was written to.
    let scratch_dir = scratch("own-reindex");
    moraine_mcp::ingest::reindex::run(
        &server.config,
        &db,
        &moraine_mcp::ingest::reindex::Selection::default(),
        &scratch_dir,
        false,
    )
    .await
    .unwrap();
    assert_eq!(sessions_seen(&server, ALICE_READER).await, after);
    let bobs_now = sessions_seen(&server, "bob-reader-token-0123456789").await;
    assert_eq!(bobs_now.len(), 3, "{bobs_now:?}");
    assert_statistics_exact(&snapshot(&db).await);
    server.stop().await;
}

/// `moraine-mcp <args>` with `vars`, a home of its own and no other variable of the family.
fn command_output(args: &[&str], vars: &[(&str, &str)]) -> std::process::Output {
    let home = scratch("command-home");
    let mut command = Command::new(BIN);
    command.args(args).env("HOME", &home);
    for (name, _) in std::env::vars().filter(|(n, _)| n.starts_with("MORAINE_MCP_")) {
        command.env_remove(name);
    }
    command
        .envs(vars.iter().copied())
        .env(
            "MORAINE_MCP_CLICKHOUSE__URL",
            // Nothing listens there: these starts are refused before any connection.
            "http://127.0.0.1:9",
        )
        .output()
        .unwrap()
}

#[test]
fn a_server_told_it_serves_a_team_never_starts_open_and_never_prints_a_token() {
    let serve = ["serve", "--listen", "127.0.0.1:0"];
    // A misspelt token variable: refused, named.
    let typo = command_output(&serve, &[("MORAINE_MCP_TEAM_TOKEN", "{ name = \"a\" }")]);
    let stderr = String::from_utf8_lossy(&typo.stderr);
    assert_eq!(typo.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("MORAINE_MCP_TEAM_TOKEN"), "{stderr}");
    // Told it is a team server (listening beyond loopback, or a public URL) without tokens.
    for (vars, setting) in [
        (
            vec![("MORAINE_MCP_SERVER__LISTEN", "0.0.0.0:0")],
            "server.listen",
        ),
        (
            vec![(
                "MORAINE_MCP_SERVER__PUBLIC_URL",
                "https://moraine.example.com",
            )],
            "server.public_url",
        ),
    ] {
        let open = command_output(&["serve"], &vars);
        let stderr = String::from_utf8_lossy(&open.stderr);
        assert_eq!(open.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(setting) && stderr.contains("MORAINE_MCP_TOKEN"),
            "{stderr}"
        );
    }
    // A token list with a syntax error: the error names the variable, never the token.
    let secret = "team-secret-token-0123456789";
    let broken = format!("{{ name = \"alice-laptop\" token = \"{secret}\" }}");
    let bad = command_output(&serve, &[("MORAINE_MCP_TEAM_TOKENS", broken.as_str())]);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("MORAINE_MCP_TEAM_TOKENS"), "{stderr}");
    assert!(!stderr.contains(secret), "{stderr}");
    let bad = command_output(
        &serve,
        &[(
            "MORAINE_MCP_AUTH__TOKENS",
            format!("[{{ name = \"ci\", token = \"{secret}\" }}").as_str(),
        )],
    );
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains(secret), "{stderr}");
}

#[tokio::test]
async fn the_token_variables_protect_a_server_and_a_push_with_a_token_to_an_open_one_is_refused() {
    // The README's variables are read by the server itself: a token is then required.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (settings, _db) = fresh_db().await;
    let home = scratch("token-vars-home");
    let mut server = Command::new(BIN)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .env("HOME", &home)
        .env("MORAINE_MCP_CLICKHOUSE__URL", &settings.clickhouse.url)
        .env("MORAINE_MCP_CLICKHOUSE__DATABASE", &settings.clickhouse.database)
        .env("MORAINE_MCP_TOKEN", READER)
        .env(
            "MORAINE_MCP_TEAM_TOKENS",
            format!("{{ name = \"alice-laptop\", token = \"{ALICE}\", scopes = [\"ingest\"], source = \"alice\" }}"),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let mut up = false;
    for _ in 0..200 {
        if common::try_get(&format!("{base}/healthz")).await == Some(200) {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "serve did not start");
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let mcp_headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let anonymous = send("POST", &format!("{base}/mcp"), &mcp_headers, &list).await;
    assert_eq!(anonymous.status, 401);
    let bearer = format!("Bearer {READER}");
    let mut with_token = mcp_headers.to_vec();
    with_token.push(("authorization", &bearer));
    assert_eq!(
        send("POST", &format!("{base}/mcp"), &with_token, &list)
            .await
            .status,
        200
    );
    let dir = scratch("token-vars-logs");
    write_sessions(&dir, 0x70, 1, 1, "varsword");
    let alice = Client::new(&base, Some(ALICE), None, Duration::from_secs(5)).unwrap();
    let pushed = push::push_logs(&alice, &logs_under(&dir), 1 << 20, false)
        .await
        .unwrap();
    assert_eq!((pushed.sent, pushed.failed), (1, 0));
    server.kill().unwrap();
    server.wait().unwrap();

    // A server without tokens refuses a push that carries one, and says why; nothing is
    // stored.
    let (settings, db) = fresh_db().await;
    let open = TestServer::start(settings, db.clone()).await;
    let refused = push::push_logs(&client(&open, ALICE), &logs_under(&dir), 1 << 20, false).await;
    let message = format!("{:#}", refused.unwrap_err());
    assert!(message.contains("no tokens configured"), "{message}");
    assert_eq!(counts(&db).await, (0, 0));
    open.stop().await;
}

#[tokio::test]
async fn behind_a_proxy_the_public_url_is_accepted_and_a_refusal_names_the_setting() {
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings.clone()), db.clone()).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let bearer = format!("Bearer {READER}");
    let headers = |host: &'static str| {
        vec![
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("authorization", bearer.as_str()),
            ("host", host),
        ]
    };
    let refused = send(
        "POST",
        &server.mcp_url,
        &headers("moraine.example.com"),
        &list,
    )
    .await;
    assert_eq!(refused.status, 403);
    assert_eq!(refused.json()["error"], "host_not_allowed");
    let message = refused.json()["message"].as_str().unwrap().to_owned();
    assert!(message.contains("server.public_url"), "{message}");
    server.stop().await;
    let mut settings = team(settings);
    settings.server.public_url = "https://moraine.example.com".into();
    let server = TestServer::start(settings, db).await;
    let accepted = send(
        "POST",
        &server.mcp_url,
        &headers("moraine.example.com"),
        &list,
    )
    .await;
    assert_eq!(accepted.status, 200, "{}", accepted.body);
    assert_eq!(
        send(
            "POST",
            &server.mcp_url,
            &headers("elsewhere.example.com"),
            &list
        )
        .await
        .status,
        403
    );
    server.stop().await;
}

#[tokio::test]
async fn a_refused_token_stops_one_push_saying_how_far_it_got_and_slows_a_watch_down() {
    let dir = scratch("refused-token");
    write_sessions(&dir, 0x7e0, 3, 2, "refusedword");
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db).await;
    let base = server.base.clone();
    let (output, watched) = tokio::task::spawn_blocking(move || {
        let push = |extra: &[&str]| {
            let mut command = Command::new(BIN);
            command
                .args(["push", "--no-progress", "--server", &base])
                .args(["--token", "revoked-token-0123456789abcdef"])
                .args(extra)
                .arg(&dir)
                .env("HOME", &dir)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            command
        };
        let output = push(&[]).output().unwrap();
        // A watch with the refused token: it says so once and waits, not every 2 s.
        let mut watch = push(&["--watch", "--interval", "1"]).spawn().unwrap();
        std::thread::sleep(Duration::from_secs(5));
        let _ = watch.kill();
        (output, watch.wait_with_output().unwrap())
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("pushed 3 files"), "{stdout}");
    assert!(
        stderr.contains("push stopped") && stderr.contains("refused the token"),
        "{stderr}"
    );
    let said = String::from_utf8_lossy(&watched.stderr);
    let refusals = said.matches("refused the token").count();
    assert_eq!(refusals, 1, "{said}");
    assert!(said.contains("trying again in 1 min"), "{said}");
    server.stop().await;
}

#[tokio::test]
async fn a_wrong_path_says_which_is_meant_and_push_takes_the_mcp_url_as_the_base() {
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    for (method, path, meant) in [
        ("POST", "/mcp/", "/mcp"),
        ("POST", "/", "/mcp"),
        ("POST", "/mcp/ingest/v1/batch", "base URL"),
        ("GET", "/ingest/v2/status", "/ingest/v1/status"),
        ("GET", "/nowhere", "/healthz"),
    ] {
        let reply = send(method, &format!("{}{path}", server.base), &[], "").await;
        assert_eq!(reply.status, 404, "{path}");
        assert_eq!(reply.json()["error"], "not_found");
        let message = reply.json()["message"].as_str().unwrap().to_owned();
        assert!(message.contains(meant), "{path}: {message}");
    }
    // push given the URL agents use: it pushes to the server's base.
    let dir = scratch("mcp-url");
    write_sessions(&dir, 0x3c1, 2, 1, "mcpurlword");
    let alice = Client::new(&server.mcp_url, Some(ALICE), None, Duration::from_secs(10)).unwrap();
    let pushed = push::push_logs(&alice, &logs_under(&dir), 1 << 20, false)
        .await
        .unwrap();
    assert_eq!((pushed.sent, pushed.failed), (2, 0));
    server.stop().await;
}

#[tokio::test]
async fn events_from_a_laptop_whose_clock_is_ahead_are_shown_at_the_time_they_arrived() {
    let dir = scratch("clock-ahead");
    write_sessions(&dir, 0x51, 1, 3, "skewed");
    // The laptop's clock is five years ahead: every event is dated in the future.
    for log in logs_under(&dir) {
        let text = std::fs::read_to_string(&log.path).unwrap();
        std::fs::write(&log.path, text.replace("2026-05-", "2031-05-")).unwrap();
    }
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let summary = push::push_logs(&client(&server, ALICE), &logs_under(&dir), 4096, false)
        .await
        .unwrap();
    assert_eq!(summary.future_events, summary.events);
    assert_eq!(summary.events, 12);
    assert!(
        summary
            .to_string()
            .contains("12 events dated after the server's clock"),
        "{summary}"
    );
    // Shown no later than the server's clock allows, so the session does not stay on top of
    // "newest first" for five years; event IDs still carry the logged time.
    let (latest_event, updated_at): (i64, i64) = db
        .read(
            "t",
            "SELECT assumeNotNull((SELECT toUnixTimestamp64Milli(max(ts)) FROM events)), \
             assumeNotNull((SELECT toUnixTimestamp64Milli(max(updated_at)) FROM sessions FINAL))",
        )
        .fetch_optional(&db, db.default_deadline())
        .await
        .unwrap()
        .unwrap();
    let ceiling = before + 3_600_000;
    for shown in [latest_event, updated_at] {
        assert!(
            shown >= before && shown <= ceiling,
            "{shown} not near {before}"
        );
    }
    let metrics = send("GET", &format!("{}/metrics", server.base), &[], "").await;
    let future = common::metric_sum(
        &metrics.body,
        "moraine_mcp_ingest_future_events_total",
        &["source=\"alice\""],
    );
    assert_eq!(future, 12.0, "{}", metrics.body);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sources_show_each_token_who_pushed_what_it_may_see() {
    let (alice_dir, bob_dir) = (scratch("sources-alice"), scratch("sources-bob"));
    write_sessions(&alice_dir, 0x61, 3, 2, "alpha");
    write_sessions(&bob_dir, 0x62, 2, 1, "beta");
    let (settings, db) = fresh_db().await;
    let server = TestServer::start(team(settings), db.clone()).await;
    push::push_logs(
        &client(&server, ALICE),
        &logs_under(&alice_dir),
        4096,
        false,
    )
    .await
    .unwrap();
    push::push_logs(&client(&server, BOB), &logs_under(&bob_dir), 4096, false)
        .await
        .unwrap();
    let url = format!("{}/ingest/v1/sources", server.base);
    let seen = |token: &'static str| {
        let url = url.clone();
        async move {
            let bearer = format!("Bearer {token}");
            let reply = send("GET", &url, &[("authorization", &bearer)], "").await;
            assert_eq!(reply.status, 200, "{token}: {}", reply.body);
            let answer = reply.json();
            answer["sources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    (
                        s["source"].as_str().unwrap().to_owned(),
                        s["sessions"].as_u64().unwrap(),
                        s["events"].as_u64().unwrap(),
                        s["origin"].as_str().unwrap().to_owned(),
                        s["lag_seconds"].as_u64().is_some() && s["last_write_at"].is_string(),
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    let alice = ("alice".to_owned(), 3, 24, "push".to_owned(), true);
    let bob = ("bob".to_owned(), 2, 8, "push".to_owned(), true);
    // A reader of everything and a metrics token see both; a reader limited to alice and a
    // laptop's ingest token see only their own.
    assert_eq!(seen(READER).await, vec![alice.clone(), bob.clone()]);
    assert_eq!(seen(PROMETHEUS).await, vec![alice.clone(), bob.clone()]);
    assert_eq!(seen(ALICE_READER).await, vec![alice.clone()]);
    assert_eq!(seen(BOB).await, vec![bob.clone()]);
    assert_eq!(send("GET", &url, &[], "").await.status, 401);
    // The command line shows the same as a table, or as JSON.
    let run = |extra: &[&str]| {
        let output = Command::new(BIN)
            .args(["sources", "--server", &server.base, "--token", READER])
            .args(extra)
            .env("HOME", scratch("sources-home"))
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let table = run(&[]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("SOURCE"), "{table}");
    assert!(
        lines[1].starts_with("alice") && lines[1].contains(" 24 "),
        "{table}"
    );
    assert!(lines[2].starts_with("bob"), "{table}");
    let json: serde_json::Value = serde_json::from_str(&run(&["--json"])).unwrap();
    assert_eq!(json["sources"][1]["sessions"], 2);
    server.stop().await;
}

#[tokio::test]
async fn a_token_without_a_source_is_not_named_to_anonymous_scrapers() {
    const CAROL: &str = "carol-laptop-token-0123456789";
    let dir = scratch("carol");
    write_sessions(&dir, 0x63, 1, 1, "gammaword");
    let (mut settings, db) = fresh_db().await;
    settings = team(settings);
    let mut carol = TokenConfig::reader("carol-laptop", CAROL);
    carol.scopes = vec![Scope::Ingest];
    settings.auth.tokens.push(carol);
    let server = TestServer::start(settings, db).await;
    push::push_logs(&client(&server, CAROL), &logs_under(&dir), 4096, false)
        .await
        .unwrap();
    let url = format!("{}/metrics", server.base);
    let named = send(
        "GET",
        &url,
        &[("authorization", &format!("Bearer {PROMETHEUS}"))],
        "",
    )
    .await;
    // Its name is its source: a metrics token sees it as both.
    assert!(
        named.body.contains("source=\"carol-laptop\""),
        "{}",
        named.body
    );
    let anonymous = send("GET", &url, &[], "").await;
    assert!(
        !anonymous.body.contains("carol-laptop"),
        "{}",
        anonymous.body
    );
    assert!(
        anonymous.body.contains("source=\"token-6\""),
        "{}",
        anonymous.body
    );
    server.stop().await;
}
