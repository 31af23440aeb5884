//! HTTP defects found by fuzzing, overload and fault injection, each with the test that shows
//! it fixed: bounded snippet work under the deadline (D1), bounded metrics labels (D2), header
//! and idle timeouts and graceful shutdown with stalled connections (D3), a session cap (D4),
//! a 413 that reaches clients which send the whole body (D5), −32602 for malformed
//! `tools/call` params (D6), `_meta` without `clientInfo` (D8), bounded logs (D9), duplicate
//! `Host` (D10), a size cap with paging for `open` (D11), busy answered within one queue wait
//! per call, bounded tool input (D13), pages of `open` (D14), write deadlines (D15), a share of
//! the connections per client (D16), and refused sessions logged once a minute (D18).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use moraine_mcp::db::{Db, DbError};
use moraine_mcp::metrics::Metrics;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{Mcp, TestServer, exchange, fresh_db, ingest_paths, request, send, try_get};

const BIN: &str = env!("CARGO_BIN_EXE_moraine-mcp");
const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("content-type", "application/json");

/// A scratch directory of this test process.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("moraine-resilience-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A Claude Code session whose tool results are `outputs` (one turn each).
fn write_claude_session(dir: &Path, session: &str, outputs: &[String]) {
    let mut file = std::fs::File::create(dir.join(format!("{session}.jsonl"))).unwrap();
    let mut second = 0;
    let mut line = |value: Value| {
        writeln!(file, "{value}").unwrap();
    };
    for (i, output) in outputs.iter().enumerate() {
        let mut ts = || {
            second += 1;
            format!("2026-03-10T10:{:02}:{:02}.000Z", second / 60, second % 60)
        };
        line(
            json!({"type": "user", "sessionId": session, "timestamp": ts(),
            "message": {"role": "user", "content": format!("check the build log {i}")}}),
        );
        line(
            json!({"type": "assistant", "sessionId": session, "timestamp": ts(),
            "message": {"model": "m", "stop_reason": "tool_use", "content": [
                {"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": "make"}}]}}),
        );
        line(
            json!({"type": "user", "sessionId": session, "timestamp": ts(),
            "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": output}]}}),
        );
        line(
            json!({"type": "assistant", "sessionId": session, "timestamp": ts(),
            "message": {"model": "m", "stop_reason": "end_turn", "content": [{"type": "text", "text": "done"}]}}),
        );
    }
}

/// D1: snippets over events dense with query terms are bounded work, run off the async
/// runtime: the call keeps its deadline and the health probe answers meanwhile.
#[tokio::test]
async fn dense_matches_keep_the_search_deadline_and_health_answers() {
    let dir = scratch("dense");
    let dense: Vec<String> = (0..6)
        .map(|i| format!("error warning build failed {i} ").repeat(60_000))
        .collect();
    write_claude_session(&dir, "5f0e3c1a-0000-4000-8000-00000000d1d1", &dense);
    let (mut config, db) = fresh_db().await;
    ingest_paths(&config, &db, &dir).await;
    config.tools.search_deadline_ms = 3000;
    let server = TestServer::start(config, db).await;
    let searches = (0..2).map(|_| {
        let url = server.mcp_url.clone();
        tokio::spawn(async move {
            let mut client = Mcp::modern(&url, None).await;
            let result = client
                .call("search_sessions", json!({"query": "error warning build failed", "event_types": ["tool_response"], "n_hits": 10}))
                .await;
            result["structuredContent"].clone()
        })
    });
    let searches: Vec<_> = searches.collect();
    let health = tokio::time::timeout(
        Duration::from_secs(10),
        send("GET", &format!("{}/healthz", server.base), &[], ""),
    )
    .await
    .expect("the health probe answers while snippets are built");
    assert_eq!(health.status, 200);
    for search in searches {
        let envelope = search.await.unwrap();
        match envelope["error"]["code"].as_str() {
            Some(code) => assert_eq!(code, "deadline_exceeded", "{envelope}"),
            None => {
                // A success is never later than the deadline.
                let elapsed = envelope["performance"]["elapsed_ms"].as_u64().unwrap();
                assert!(elapsed <= 3000, "answered after its deadline: {elapsed} ms");
                let hits = envelope["data"]["results"].as_array().unwrap();
                assert!(!hits.is_empty());
                assert!(
                    hits.iter()
                        .all(|h| h["snippet"]["text"].as_str().unwrap().chars().count() <= 240)
                );
            }
        }
    }
    server.stop().await;
    std::fs::remove_dir_all(dir).unwrap();
}

/// D2: request methods a client invents share one metrics label.
#[tokio::test]
async fn invented_methods_do_not_grow_the_metrics() {
    let (config, db) = fresh_db().await;
    let server = TestServer::start(config, db).await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    for i in 0..200 {
        let method = format!("BREW{i}");
        let head = exchange(&addr, &request(&method, &addr, "/healthz", &[], "")).await;
        assert!(head.status == 405 || head.status == 404, "{}", head.status);
    }
    let metrics = send("GET", &format!("{}/metrics", server.base), &[], "").await;
    assert!(
        !metrics.body.contains("BREW"),
        "an invented method became a label"
    );
    assert!(metrics.body.contains("method=\"other\""));
    server.stop().await;
}

/// D3: stalled partial headers and idle keep-alives neither deny service nor outlive the
/// header timeout, and shutdown does not wait for them.
#[tokio::test]
async fn stalled_and_idle_connections_are_closed_and_do_not_deny_service() {
    let (mut config, db) = fresh_db().await;
    config.server.header_timeout_secs = 2;
    // Every connection here comes from one address: its share is not what this tests (D16).
    config.server.max_connections_per_client = 1024;
    let server = TestServer::start(config, db).await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut stalled = Vec::new();
    for i in 0..300 {
        let mut stream = TcpStream::connect(&addr).await.unwrap();
        // Half a header: never finished.
        stream
            .write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nX-Slow: {i}").as_bytes())
            .await
            .unwrap();
        stalled.push(stream);
    }
    let mut idle = TcpStream::connect(&addr).await.unwrap();
    idle.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut first = [0u8; 12];
    idle.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");

    let served = tokio::time::timeout(
        Duration::from_secs(1),
        send("GET", &format!("{}/healthz", server.base), &[], ""),
    )
    .await
    .expect("a normal request is served within 1 s beside 300 stalled connections");
    assert_eq!(served.status, 200);

    // Every stalled connection is closed by the server once the header timeout passes.
    for stream in &mut stalled {
        let mut buffer = [0u8; 512];
        let closed = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(closed.is_ok(), "a stalled connection was kept open");
    }
    // Shutdown with an idle keep-alive still open does not wait for it.
    let stopped = tokio::time::timeout(Duration::from_secs(4), server.stop()).await;
    assert!(stopped.is_ok(), "shutdown waited for an idle connection");
    drop(idle);
}

/// D4: stateful mode holds at most `server.max_sessions` sessions.
#[tokio::test]
async fn sessions_beyond_the_cap_are_refused_until_one_ends() {
    let (mut config, db) = fresh_db().await;
    config.server.stateful = true;
    config.server.max_sessions = 3;
    let server = TestServer::start(config, db).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cap", "version": "1"}}})
    .to_string();
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let reply = send("POST", &server.mcp_url, &[JSON, ACCEPT], &init).await;
        assert_eq!(reply.status, 200);
        sessions.push(reply.headers["mcp-session-id"].clone());
    }
    let refused = send("POST", &server.mcp_url, &[JSON, ACCEPT], &init).await;
    assert_eq!(refused.status, 503);
    assert_eq!(refused.json()["error"], "too_many_sessions");
    assert!(refused.headers.contains_key("retry-after"));
    let ended = send(
        "DELETE",
        &server.mcp_url,
        &[
            ("mcp-session-id", sessions[0].as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        "",
    )
    .await;
    assert!(ended.status < 300, "{ended:?}");
    let again = send("POST", &server.mcp_url, &[JSON, ACCEPT], &init).await;
    assert_eq!(again.status, 200);
    server.stop().await;
}

/// D5: a client that sends its whole oversized body before reading gets the 413, not a reset.
#[tokio::test]
async fn the_413_reaches_clients_that_send_the_whole_body() {
    let (mut config, db) = fresh_db().await;
    config.server.request_body_limit_bytes = 64 * 1024;
    let server = TestServer::start(config, db).await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    let body = "x".repeat(1024 * 1024);
    for _ in 0..20 {
        let mut stream = TcpStream::connect(&addr).await.unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream
            .write_all(body.as_bytes())
            .await
            .expect("the server reads the refused body instead of resetting");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        assert!(
            answer.to_ascii_lowercase().contains("connection: close"),
            "{answer}"
        );
    }
    server.stop().await;
}

/// D6: `tools/call` with params of the wrong shape is −32602 (invalid params), in both
/// protocol generations, however the method is escaped; D8: a 2026-07-28 request without `clientInfo` is served.
#[tokio::test]
async fn malformed_tool_call_params_are_invalid_params() {
    let (config, db) = fresh_db().await;
    let server = TestServer::start(config, db).await;
    let bad_params = [
        json!({"name": "search_sessions", "arguments": "query"}),
        json!({"name": 42, "arguments": {}}),
        json!(["search_sessions"]),
    ];
    for params in &bad_params {
        let legacy = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
        let reply = send(
            "POST",
            &server.mcp_url,
            &[JSON, ACCEPT, ("mcp-protocol-version", "2025-11-25")],
            &legacy.to_string(),
        )
        .await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(reply.json()["error"]["code"], -32602, "{reply:?}");
        assert_eq!(reply.json()["id"], 7);

        let mut modern_params = params.clone();
        if let Value::Object(map) = &mut modern_params {
            map.insert(
                "_meta".into(),
                json!({
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                }),
            );
        }
        let modern =
            json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": modern_params});
        let reply = send(
            "POST",
            &server.mcp_url,
            &[
                JSON,
                ACCEPT,
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "search_sessions"),
            ],
            &modern.to_string(),
        )
        .await;
        assert_eq!(reply.status, 400, "{reply:?}");
        assert_eq!(reply.json()["error"]["code"], -32602, "{reply:?}");
    }
    // The method written with JSON escapes is the same method.
    for method in [r"tools\/call", r"tools\u002fcall", r"\u0074ools/call"] {
        let body = format!(
            r#"{{"jsonrpc": "2.0", "id": 10, "method": "{method}", "params": {{"name": 42}}}}"#
        );
        let reply = send(
            "POST",
            &server.mcp_url,
            &[JSON, ACCEPT, ("mcp-protocol-version", "2025-11-25")],
            &body,
        )
        .await;
        assert_eq!(reply.json()["error"]["code"], -32602, "{method}: {reply:?}");
    }
    // D8: no clientInfo in _meta (it is a SHOULD): served.
    let list = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let reply = send(
        "POST",
        &server.mcp_url,
        &[
            JSON,
            ACCEPT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ],
        &list.to_string(),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.json()["result"]["tools"].as_array().unwrap().len(), 3);
    server.stop().await;
}

/// A `serve` process on a free port whose engine is unreachable, logging to a file, with
/// `settings` (environment variables) added: (process, base URL, log path), once it answers.
async fn serve_logging(name: &str, settings: &[(&str, &str)]) -> (Child, String, PathBuf) {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let log = scratch(name).join("stderr.log");
    let child = Command::new(BIN)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .env("MORAINE_MCP_CLICKHOUSE__URL", "http://127.0.0.1:9")
        .env("MORAINE_MCP_CLICKHOUSE__STARTUP_WAIT_SECS", "1")
        .envs(settings.iter().copied())
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while try_get(&format!("{base}/healthz")).await.is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the server did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (child, base, log)
}

/// Stops a [`serve_logging`] process and returns its log.
fn stop_logging(mut child: Child, log: &Path) -> String {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    child.wait().unwrap();
    std::fs::read_to_string(log).unwrap()
}

/// D9: unknown tool names are logged (and echoed) truncated, and an unhealthy engine is one
/// log line, not one per probe.
#[tokio::test]
async fn logs_stay_small_under_huge_names_and_repeated_failed_probes() {
    let (child, base, log) = serve_logging("logs", &[]).await;
    let name = "n".repeat(1_000_000);
    for id in 0..5 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}});
        let reply = send(
            "POST",
            &format!("{base}/mcp"),
            &[JSON, ACCEPT, ("mcp-protocol-version", "2025-11-25")],
            &call.to_string(),
        )
        .await;
        assert_eq!(reply.status, 200);
        let message = reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(message.len() < 200, "the error echoes the whole name");
    }
    for _ in 0..30 {
        let health = send("GET", &format!("{base}/healthz"), &[], "").await;
        assert_eq!(health.status, 503);
    }
    let text = stop_logging(child, &log);
    assert!(text.len() < 256 * 1024, "{} bytes of log", text.len());
    let unhealthy = text.lines().filter(|l| l.contains("unhealthy")).count();
    assert!(
        unhealthy <= 1,
        "{unhealthy} unhealthy lines for 30 failed probes"
    );
    assert!(!text.contains(" ERROR "), "{text}");
}

/// D18: MCP sessions refused at the session cap are one warning a minute, not one each.
#[tokio::test]
async fn sessions_refused_at_the_cap_are_logged_once_a_minute() {
    let settings = [
        ("MORAINE_MCP_SERVER__STATEFUL", "true"),
        ("MORAINE_MCP_SERVER__MAX_SESSIONS", "1"),
    ];
    let (child, base, log) = serve_logging("refusals", &settings).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cap", "version": "1"}}})
    .to_string();
    let mut statuses = Vec::new();
    for _ in 0..200 {
        let reply = send("POST", &format!("{base}/mcp"), &[JSON, ACCEPT], &init).await;
        statuses.push(reply.status);
    }
    assert_eq!(
        (
            statuses.iter().filter(|s| **s == 200).count(),
            statuses.iter().filter(|s| **s == 503).count()
        ),
        (1, 199),
        "{statuses:?}"
    );
    let text = stop_logging(child, &log);
    let refusals = text
        .lines()
        .filter(|l| l.contains("refusing new MCP sessions"))
        .count();
    assert_eq!(
        refusals, 1,
        "{refusals} lines for 199 refused sessions:\n{text}"
    );
}

/// D10: two `Host` headers are refused (RFC 9112).
#[tokio::test]
async fn duplicate_host_headers_are_refused() {
    let (config, db) = fresh_db().await;
    let server = TestServer::start(config, db).await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    let head = exchange(
        &addr,
        &request(
            "GET",
            &addr,
            "/healthz",
            &[("Host", "elsewhere.example")],
            "",
        ),
    )
    .await;
    assert_eq!(head.status, 400);
    let head = exchange(&addr, &request("GET", &addr, "/healthz", &[], "")).await;
    assert_eq!(head.status, 200);
    server.stop().await;
}

/// D11: `open` of a huge event returns a bounded part of its text, and the parts, fetched by
/// `content_offset`, make up the whole text exactly.
#[tokio::test]
async fn open_of_a_huge_event_is_bounded_and_pages_through_the_rest() {
    let dir = scratch("huge");
    let huge: String = (0..200_000).map(|i| format!("line {i} é数据 ")).collect();
    write_claude_session(
        &dir,
        "5f0e3c1a-0000-4000-8000-0000000d11d1",
        std::slice::from_ref(&huge),
    );
    let (mut config, db) = fresh_db().await;
    ingest_paths(&config, &db, &dir).await;
    config.tools.open_content_chars = 100_000;
    let server = TestServer::start(config, db).await;
    let mut client = Mcp::modern(&server.mcp_url, None).await;
    let found = client
        .ok(
            "search_sessions",
            json!({"query": "line 199999", "event_types": ["tool_response"]}),
        )
        .await;
    let event = found["data"]["results"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut text = String::new();
    let mut offset: Option<u64> = None;
    let mut parts = 0;
    loop {
        let mut args = json!({"id": event});
        if let Some(offset) = offset {
            args["content_offset"] = json!(offset);
        }
        let opened = client.ok("open", args).await;
        let content = &opened["data"]["content"];
        let part = content["text"].as_str().unwrap();
        assert!(part.chars().count() <= 100_000);
        assert_eq!(content["truncated"], true, "part {parts}");
        text.push_str(part);
        parts += 1;
        if parts == 1 {
            assert!(
                content["raw"]["message"]["content"][0]["content"] == "<content.text>",
                "{}",
                content["raw"]
            );
        }
        match content["next_content_offset"].as_u64() {
            Some(next) => offset = Some(next),
            None => break,
        }
    }
    assert_eq!(text, huge);
    assert!(parts >= 30);
    let (code, _) = client
        .err(
            "open",
            json!({"id": found["data"]["results"][0]["session"]["id"], "content_offset": 5}),
        )
        .await;
    assert_eq!(code, "invalid_request");
    server.stop().await;
    std::fs::remove_dir_all(dir).unwrap();
}

/// A busy answer comes within one queue wait per call, however many statements the call runs.
#[tokio::test]
async fn a_call_waits_for_query_slots_once() {
    let (mut config, _db) = fresh_db().await;
    config.clickhouse.max_concurrent_queries = 1;
    config.clickhouse.queue_timeout_ms = 1000;
    let db = Db::new(&config.clickhouse, Metrics::new(&config.sla));
    let holder = db.clone();
    let hold = tokio::spawn(async move {
        holder
            .read("test_hold", "SELECT sleep(3)")
            .fetch_all::<u8>(&holder, Instant::now() + Duration::from_secs(10))
            .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut waited = Duration::ZERO;
    let outcome = db
        .admit_call(async {
            // The call's queue wait is spent (here by sleeping; in a tool, by earlier waits).
            tokio::time::sleep(Duration::from_millis(1100)).await;
            let asked = Instant::now();
            let result = db
                .read("test_second", "SELECT 1")
                .fetch_all::<u8>(&db, Instant::now() + Duration::from_secs(10))
                .await;
            waited = asked.elapsed();
            result
        })
        .await;
    assert!(matches!(outcome, Err(DbError::Busy)), "{outcome:?}");
    assert!(
        waited < Duration::from_millis(500),
        "a spent call waited again: {waited:?}"
    );
    hold.await.unwrap().unwrap();
}

/// The peak resident memory of a process, in bytes (`VmHWM`).
pub(crate) fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// D13: a tool call whose one array holds half a million wrong items is answered by its
/// first error, without one error per item: six at once cost what parsing their JSON costs
/// (about 200 MiB; each listed every item's error before, 948 MB for six).
#[tokio::test]
async fn a_huge_argument_array_is_refused_without_listing_every_item() {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .env("MORAINE_MCP_CLICKHOUSE__URL", "http://127.0.0.1:9")
        .env("MORAINE_MCP_CLICKHOUSE__STARTUP_WAIT_SECS", "1")
        .env("HOME", scratch("huge-array"))
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while try_get(&format!("{base}/healthz")).await.is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the server did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = peak_memory(child.id());
    let items = vec![json!(0); 500_000];
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "search_sessions", "arguments": {"query": "x", "event_types": items}}})
    .to_string();
    assert!(call.len() < 1 << 20, "{} bytes", call.len());
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let (url, call) = (format!("{base}/mcp"), call.clone());
            tokio::spawn(async move {
                send(
                    "POST",
                    &url,
                    &[JSON, ACCEPT, ("mcp-protocol-version", "2025-11-25")],
                    &call,
                )
                .await
            })
        })
        .collect();
    for call in calls {
        let reply = call.await.unwrap();
        assert_eq!(reply.status, 200);
        let envelope = &reply.json()["result"]["structuredContent"];
        assert_eq!(envelope["error"]["code"], "invalid_request", "{envelope}");
        let message = envelope["error"]["message"].as_str().unwrap();
        assert!(message.contains("at most"), "{message}");
    }
    let grew = peak_memory(child.id()).saturating_sub(before);
    eprintln!("six 1 MB calls: peak memory grew {} MiB", grew >> 20);
    assert!(grew < 400 << 20, "peak memory grew {} MiB", grew >> 20);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    child.wait().unwrap();
}

/// D14: `open` of a session of many turns, or a turn of many events, lists a bounded page;
/// the pages, fetched by `offset`, list every turn (event) once, and the turn's traversal
/// names its own first and last events on every page.
#[tokio::test]
async fn open_of_a_long_session_or_turn_is_bounded_and_pages_through_the_rest() {
    let dir = scratch("long");
    // 250 turns in one session; a last turn of 1 + 2 × 150 + 1 events.
    let outputs: Vec<String> = (0..250).map(|i| format!("built {i}")).collect();
    write_claude_session(&dir, "5f0e3c1a-0000-4000-8000-0000000d14d1", &outputs);
    let session = "5f0e3c1a-0000-4000-8000-0000000d14d2";
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("{session}.jsonl")))
        .unwrap();
    let mut lines = vec![
        json!({"type": "user", "sessionId": session, "timestamp": "2026-03-11T10:00:00.000Z",
        "message": {"role": "user", "content": "run every check"}}),
    ];
    for i in 0..150 {
        lines.push(json!({"type": "assistant", "sessionId": session, "timestamp": "2026-03-11T10:00:01.000Z",
            "message": {"model": "m", "stop_reason": "tool_use", "content": [
                {"type": "tool_use", "id": format!("c{i}"), "name": "Bash", "input": {"command": format!("check {i}")}}]}}));
        lines.push(json!({"type": "user", "sessionId": session, "timestamp": "2026-03-11T10:00:02.000Z",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("c{i}"), "content": "ok"}]}}));
    }
    lines.push(json!({"type": "assistant", "sessionId": session, "timestamp": "2026-03-11T10:00:03.000Z",
        "message": {"model": "m", "stop_reason": "end_turn", "content": [{"type": "text", "text": "all checks pass"}]}}));
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
    drop(file);
    let (mut config, db) = fresh_db().await;
    ingest_paths(&config, &db, &dir).await;
    config.tools.open_max_turns = 100;
    config.tools.open_max_events = 100;
    let server = TestServer::start(config, db).await;
    let mut client = Mcp::modern(&server.mcp_url, None).await;
    let id_of = |native: &str| {
        moraine_mcp::ids::session_id(moraine_mcp::ingest::files::session_key(
            moraine_mcp::vocab::Harness::ClaudeCode,
            native,
        ))
    };
    // Pages through a list: (items seen with their IDs, pages, every page's traversal ends).
    let mut pages = async |id: &str, list: &str| {
        let (mut seen, mut offset, mut count) = (Vec::new(), None::<u64>, 0);
        let mut ends = Vec::new();
        loop {
            let mut args = json!({"id": id});
            if let Some(offset) = offset {
                args["offset"] = json!(offset);
            }
            let opened = client.ok("open", args).await;
            let data = &opened["data"];
            let items = data[list].as_array().unwrap();
            assert!(items.len() <= 100, "{} {list} in one answer", items.len());
            seen.extend(
                items
                    .iter()
                    .map(|i| (i["ordinal"].as_u64().unwrap(), i["id"].clone())),
            );
            count += 1;
            ends.push((
                data["traversal"]["first_event_id"].clone(),
                data["traversal"]["last_event_id"].clone(),
            ));
            match data["next_offset"].as_u64() {
                Some(next) => {
                    assert_eq!(data["truncated"], true);
                    offset = Some(next);
                }
                None => {
                    assert_eq!(data["truncated"], false);
                    break;
                }
            }
        }
        (seen, count, ends)
    };
    let ordinals = |seen: &[(u64, Value)]| seen.iter().map(|s| s.0).collect::<Vec<u64>>();
    let (turns, count, _) = pages(&id_of("5f0e3c1a-0000-4000-8000-0000000d14d1"), "turns").await;
    assert_eq!(ordinals(&turns), (1..=250).collect::<Vec<u64>>());
    assert_eq!(count, 3);
    let turn = moraine_mcp::ids::turn_id(
        moraine_mcp::ingest::files::session_key(moraine_mcp::vocab::Harness::ClaudeCode, session),
        1,
    );
    let (events, count, ends) = pages(&turn, "events").await;
    assert_eq!(ordinals(&events), (1..=302).collect::<Vec<u64>>());
    assert_eq!(count, 4);
    let whole = (events[0].1.clone(), events[301].1.clone());
    assert!(ends.iter().all(|page| *page == whole), "{ends:?}");
    let (code, _) = client
        .err("open", json!({"id": turn, "content_offset": 5}))
        .await;
    assert_eq!(code, "invalid_request");
    server.stop().await;
    std::fs::remove_dir_all(dir).unwrap();
}

/// D15: clients that pipeline requests and never read their answers are disconnected once
/// no byte of an answer could be sent for `server.write_timeout_secs`: they do not keep the
/// server's connection slots (every probe failed for 120 s with 70 such clients before), and
/// shutdown does not wait for them.
#[tokio::test]
async fn clients_that_never_read_do_not_keep_the_connection_slots() {
    let (mut config, db) = fresh_db().await;
    config.server.max_connections = 64;
    config.server.max_connections_per_client = 64;
    config.server.write_timeout_secs = 2;
    let server = TestServer::start(config, db).await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    let pipelined: String = (0..400)
        .map(|_| format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n"))
        .collect();
    let mut deaf = Vec::new();
    for _ in 0..70 {
        let mut stream = TcpStream::connect(&addr).await.unwrap();
        // Written from a task: the server stops reading once its answers back up.
        let requests = pipelined.clone();
        let writer = tokio::spawn(async move {
            let _ = stream.write_all(requests.as_bytes()).await;
            stream
        });
        deaf.push(writer);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let served = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(Some(status)) = tokio::time::timeout(
                Duration::from_secs(1),
                try_get(&format!("{}/healthz", server.base)),
            )
            .await
            {
                return status;
            }
        }
    })
    .await
    .expect("a probe is served once the deaf clients are disconnected");
    assert_eq!(served, 200);
    let stopped = tokio::time::timeout(Duration::from_secs(8), server.stop()).await;
    assert!(
        stopped.is_ok(),
        "shutdown waited for clients that never read"
    );
    drop(deaf);
}

/// D16: one client address holds at most `server.max_connections_per_client` connections:
/// another client is served at once while it floods the server with stalled connections
/// (every other request waited 8–9 s behind 1,100 of them before).
#[tokio::test]
async fn one_client_cannot_take_every_connection_slot() {
    let (mut config, db) = fresh_db().await;
    config.server.max_connections = 32;
    config.server.max_connections_per_client = 8;
    config.server.header_timeout_secs = 30;
    let server = TestServer::start(config, db).await;
    let addr: std::net::SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    // The flooding client: another loopback address, its connections stalled in their header.
    let mut flood = Vec::new();
    for i in 0..200 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        let Ok(mut stream) = socket.connect(addr).await else {
            continue;
        };
        let _ = stream
            .write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nX-Slow: {i}").as_bytes())
            .await;
        flood.push(stream);
    }
    let served = tokio::time::timeout(
        Duration::from_secs(5),
        send("GET", &format!("{}/healthz", server.base), &[], ""),
    )
    .await
    .expect("another client is served beside the flood");
    assert_eq!(served.status, 200);
    // Of the flood, the client's share stays open; the rest were closed as they came.
    let mut open = 0;
    for stream in &mut flood {
        let mut buffer = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buffer)).await;
        if read.is_err() {
            open += 1;
        }
    }
    assert!(open <= 8, "{open} of the flood's connections kept");
    server.stop().await;
}
