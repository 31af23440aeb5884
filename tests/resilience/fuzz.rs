//! Fuzzing the MCP surface of a real server process: generated tool calls with hostile
//! arguments, and malformed JSON-RPC and HTTP around them. Pass: no panic, no 5xx, no dropped
//! or hung connection, every tool error a spec envelope with a documented code, memory flat.
//!
//! `MORAINE_FUZZ_CALLS` sets how many requests are sent (5,000 by default; the long form in
//! docs/reliability.md sends 100,000) and `MORAINE_FUZZ_SEED` the generator's seed.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use crate::common::{MODERN, Rng, fixtures, fresh_db, ingest_paths, message_text};
use crate::own_engine::BIN;

/// The spec's error codes a hostile call may get. `internal_error` is not among them: it
/// would mean the server failed on input it should have refused.
const DOCUMENTED: &[&str] = &[
    "invalid_request",
    "invalid_id",
    "not_found",
    "unsupported_event_type",
    "deadline_exceeded",
    "busy",
    "backend_failure",
    "resource_exhausted",
];

/// JSON-RPC error codes for malformed messages (parse error, invalid request, unknown method,
/// invalid params).
const JSONRPC_CODES: &[i64] = &[-32700, -32600, -32601, -32602];

const HOSTILE_STRINGS: &[&str] = &[
    "",
    " ",
    "\u{0}",
    "a\u{0}b",
    "\u{1}\u{2}\u{7f}\u{1b}[31m",
    "\u{202e}evil\u{202d}",
    "\u{feff}",
    "🦀🦀🦀",
    "'; DROP TABLE events; --",
    "\" OR 1=1 --",
    "{query:String}",
    "{s:UInt64}",
    "$1 %s %n %x",
    ".*(a+)+$",
    "[[[[[[",
    "\\",
    "\\u0000",
    "../../../../etc/passwd",
    "session:",
    "session:../../x",
    "turn:",
    "turn:abc:def",
    "event:-1",
    "event:99999999999999999999999999",
    "session:0000",
    "SESSION:abc",
    "2026-13-45T25:61:61Z",
    "0000-00-00T00:00:00Z",
    "+275760-09-13T00:00:00Z",
    "-001000-01-01T00:00:00Z",
    "2026-01-01",
    "now",
    "NaN",
    "Infinity",
    "null",
    "true",
    "AAAAAAAAAAAAAAAAAAAA",
    "eyJ4IjoxfQ",
    "%%%",
    "tool_call",
    "user_input,tool_call",
];

/// IDs and a cursor the corpus really has, for calls that are almost right.
struct Known {
    ids: Vec<String>,
    cursor: String,
    tools: Vec<(String, Vec<String>)>,
}

fn hostile_string(rng: &mut Rng) -> String {
    match rng.below(5) {
        0 => "x".repeat(rng.below(100_000)),
        1 => (0..rng.below(64))
            .map(|_| char::from_u32(rng.below(0x11_0000) as u32).unwrap_or('\u{fffd}'))
            .collect(),
        _ => (*rng.pick(HOSTILE_STRINGS)).to_owned(),
    }
}

fn hostile(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 2 { 4 } else { 7 }) {
        0 => Value::Null,
        1 => json!(rng.pick(&[true, false])),
        2 => rng
            .pick(&[
                json!(0),
                json!(-1),
                json!(i64::MIN),
                json!(i64::MAX),
                json!(u64::MAX),
                json!(1e308),
                json!(-1e308),
                json!(0.5),
                json!(1e-308),
                json!(4_294_967_296u64),
            ])
            .clone(),
        3 => json!(hostile_string(rng)),
        4 => Value::Array((0..rng.below(6)).map(|_| hostile(rng, depth + 1)).collect()),
        5 => {
            let mut object = serde_json::Map::new();
            for _ in 0..rng.below(6) {
                object.insert(hostile_string(rng), hostile(rng, depth + 1));
            }
            Value::Object(object)
        }
        _ => Value::Array((0..rng.below(5000)).map(|i| json!(i)).collect()),
    }
}

/// A plausible value for a field, so that calls get past the first check often enough.
fn plausible(rng: &mut Rng, field: &str, known: &Known) -> Value {
    let id = || known.ids.clone();
    match field {
        "query" => json!(rng.pick(&["healthz", "build", "error the", "session open", "x y z"])),
        "event_types" => json!(rng.pick(&[
            json!(["user_input"]),
            json!(["tool_call", "tool_response"]),
            json!([]),
            json!(["assistant_response", "reasoning"]),
        ])),
        "harness" => json!(rng.pick(&["claude-code", "codex", "claude"])),
        "source" => json!("local"),
        "n_hits" | "limit" => json!(1 + rng.below(20)),
        "content_offset" => json!(rng.below(5000)),
        "offset" => json!(rng.below(50)),
        "within_id" | "id" => {
            let ids = id();
            let mut chosen = rng.pick(&ids).clone();
            // Almost right: cut, lengthened or one character changed.
            match rng.below(8) {
                0 => {
                    let at = rng.below(chosen.len() + 1);
                    cut(&mut chosen, at);
                }
                1 => {
                    let tail: &&str = rng.pick(&["0", ":", "x", "é"]);
                    chosen.push_str(tail);
                }
                2 if !chosen.is_empty() => {
                    let at = rng.below(chosen.len());
                    if chosen.is_char_boundary(at) && chosen.is_char_boundary(at + 1) {
                        chosen.replace_range(at..at + 1, "z");
                    }
                }
                _ => {}
            }
            json!(chosen)
        }
        "cursor" => {
            let mut cursor = known.cursor.clone();
            if rng.chance(20) && !cursor.is_empty() {
                let at = rng.below(cursor.len());
                cut(&mut cursor, at);
            }
            json!(cursor)
        }
        "start_datetime" => json!(rng.pick(&["2020-01-01T00:00:00Z", "2026-05-01T00:00:00+02:00"])),
        "end_datetime" => json!(rng.pick(&["2030-01-01T00:00:00Z", "2026-05-02T00:00:00.123Z"])),
        "mode" => json!(rng.pick(&["web_search", "mcp_internal", "tool_calling", "chat"])),
        "sort" => json!(rng.pick(&["asc", "desc"])),
        _ => json!("x"),
    }
}

fn arguments(rng: &mut Rng, fields: &[String], known: &Known) -> Value {
    if rng.chance(5) {
        return hostile(rng, 0);
    }
    let mut object = serde_json::Map::new();
    // Some calls are plausible but for one field (or none), so that hostile values also
    // reach the later stages: ID resolution, cursors, the queries.
    if rng.chance(50) {
        let odd = rng.below(2 * fields.len() + 1);
        for (i, field) in fields.iter().enumerate() {
            // Paging applies to some IDs only (`content_offset` to events, `offset` to
            // sessions and turns): a client leaves it out as often as not.
            if i != odd && field.ends_with("offset") && rng.chance(50) {
                continue;
            }
            let value = if i == odd {
                hostile(rng, 0)
            } else {
                plausible(rng, field, known)
            };
            object.insert(field.clone(), value);
        }
        return Value::Object(object);
    }
    for field in fields {
        match rng.below(10) {
            0..=3 => {
                object.insert(field.clone(), hostile(rng, 0));
            }
            4..=7 => {
                object.insert(field.clone(), plausible(rng, field, known));
            }
            _ => {}
        }
    }
    if rng.chance(10) {
        object.insert(hostile_string(rng), hostile(rng, 1));
    }
    Value::Object(object)
}

/// One request to send, and whether its envelope is well formed (then only its arguments are
/// hostile, and the answer must be a 200 carrying a result or a JSON-RPC error).
struct Case {
    method: &'static str,
    headers: Vec<(String, String)>,
    body: String,
    well_formed: bool,
}

fn modern_headers(method: &str, name: Option<&str>) -> Vec<(String, String)> {
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        (
            "accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
        ("mcp-protocol-version".to_owned(), MODERN.to_owned()),
        ("mcp-method".to_owned(), method.to_owned()),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name".to_owned(), name.to_owned()));
    }
    headers
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

fn tool_call(rng: &mut Rng, known: &Known, n: usize) -> Case {
    let (tool, fields) = rng.pick(&known.tools).clone();
    let body = json!({
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments(rng, &fields, known), "_meta": meta()},
    });
    Case {
        method: "POST",
        headers: modern_headers("tools/call", Some(&tool)),
        body: body.to_string(),
        well_formed: true,
    }
}

fn malformed(rng: &mut Rng, known: &Known, n: usize) -> Case {
    let valid = tool_call(rng, known, n);
    let mut case = Case {
        well_formed: false,
        ..valid
    };
    match rng.below(16) {
        0 => {
            let at = rng.below(case.body.len());
            cut(&mut case.body, at);
        }
        1 => case.body = String::new(),
        2 => case.body = "[]".into(),
        3 => case.body = format!("[{},{}]", case.body, case.body),
        4 => case.body = case.body.replacen("\"2.0\"", "\"1.0\"", 1),
        5 => case.body = case.body.replacen("\"id\":", "\"id\":{\"x\":", 1) + "}",
        6 => case.body = json!({"jsonrpc": "2.0", "id": n, "method": hostile_string(rng), "params": {"_meta": meta()}}).to_string(),
        7 => case.body = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": hostile(rng, 0)}).to_string(),
        8 => {
            let depth = 200 + rng.below(20_000);
            case.body = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{n},\"method\":\"tools/call\",\"params\":{{\"name\":\"open\",\"arguments\":{{\"id\":{}{}}}}}}}",
                "[".repeat(depth),
                "]".repeat(depth)
            );
        }
        9 => case.headers.retain(|(k, _)| k != "content-type"),
        10 => case.headers[0].1 = rng.pick(&["text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", ""]).to_string(),
        11 => case.headers.retain(|(k, _)| k != "accept"),
        12 => case.headers[1].1 = rng.pick(&["text/html", "*/*", "application/xml", ""]).to_string(),
        13 => {
            let version = rng.pick(&["1999-01-01", "", "2025-11-25", "garbage\u{7f}"]).to_string();
            case.headers[2].1 = version;
        }
        14 => case
            .headers
            .push(("mcp-session-id".into(), hostile_string(rng).chars().filter(|c| !c.is_control()).take(200).collect())),
        _ => case.method = *rng.pick(&["GET", "PUT", "DELETE", "PATCH"]),
    }
    // Header values must be valid header values for the client to send them at all.
    case.headers
        .retain(|(_, v)| axum::http::HeaderValue::from_str(v).is_ok());
    case
}

/// `text` cut at `at`, or at the character boundary before it.
fn cut(text: &mut String, mut at: usize) {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
}

/// At most `chars` characters of `text`, for messages.
fn clip(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

/// What the server answered, for the tally.
#[derive(Debug)]
enum Outcome {
    Result,
    ToolError(String),
    RpcError(i64),
    Status(u16),
}

fn judge(case: &Case, status: u16, content_type: &str, body: &str) -> Result<Outcome, String> {
    if status >= 500 {
        return Err(format!("status {status}: {}", clip(body, 300)));
    }
    if !case.well_formed {
        return Ok(Outcome::Status(status));
    }
    // The modern transport answers a message it cannot take (arguments not an object, say)
    // with 400 and the JSON-RPC error.
    if status != 200 && status != 400 {
        return Err(format!(
            "a well-formed call got {status}: {}",
            clip(body, 300)
        ));
    }
    let text = message_text(content_type, body).ok_or("no JSON in the event stream")?;
    let message: Value = serde_json::from_str(text).map_err(|e| format!("{e}: {text}"))?;
    if let Some(code) = message["error"]["code"].as_i64() {
        return if JSONRPC_CODES.contains(&code) {
            Ok(Outcome::RpcError(code))
        } else {
            Err(format!("JSON-RPC error {code}: {message}"))
        };
    }
    if status == 400 {
        return Err(format!("400 without a JSON-RPC error: {message}"));
    }
    let result = &message["result"];
    if result["isError"] == true {
        let envelope = &result["structuredContent"];
        let code = envelope["error"]["code"].as_str().unwrap_or_default();
        if envelope["schema_version"] != "moraine.mcp.error.v1" || !DOCUMENTED.contains(&code) {
            return Err(format!("not a spec error envelope: {result}"));
        }
        return Ok(Outcome::ToolError(code.to_owned()));
    }
    if result["structuredContent"].is_object() {
        Ok(Outcome::Result)
    } else {
        Err(format!("neither a result nor an error: {message}"))
    }
}

/// The server as a process of its own, so that its memory is its own.
struct Served {
    child: Child,
    url: String,
    log: std::path::PathBuf,
}

impl Served {
    async fn start(url: &str, database: &str) -> Self {
        let log = std::env::temp_dir().join(format!("moraine-fuzz-{}.log", std::process::id()));
        let child = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("MORAINE_MCP_CLICKHOUSE__URL", url)
            .env("MORAINE_MCP_CLICKHOUSE__DATABASE", database)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        // Killed on drop, should the server never say where it serves.
        let mut served = Self {
            child,
            url: String::new(),
            log,
        };
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(&served.log).unwrap_or_default();
            if let Some(at) = text.find("is serving MCP at ") {
                served.url = text[at + 18..]
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .to_owned();
                return served;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "{text}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap()
    }

    fn log(&self) -> String {
        let mut text = String::new();
        let _ = std::fs::File::open(&self.log).and_then(|mut f| f.read_to_string(&mut text));
        text
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

async fn learn(client: &Client<HttpConnector, Full<Bytes>>, url: &str) -> Known {
    let call = |method: &'static str, name: Option<&'static str>, params: Value| {
        let mut params = params;
        params["_meta"] = meta();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = axum::http::Request::post(url);
        for (k, v) in modern_headers(method, name) {
            request = request.header(k, v);
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        async move {
            let response = client.request(request).await.unwrap();
            let content_type = response
                .headers()
                .get("content-type")
                .and_then(|c| c.to_str().ok())
                .unwrap_or("")
                .to_owned();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let text = String::from_utf8_lossy(&body);
            serde_json::from_str::<Value>(message_text(&content_type, &text).unwrap()).unwrap()
        }
    };
    let tools = call("tools/list", None, json!({})).await;
    let tools: Vec<(String, Vec<String>)> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let fields = t["inputSchema"]["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            (t["name"].as_str().unwrap().to_owned(), fields)
        })
        .collect();
    let found = call(
        "tools/call",
        Some("search_sessions"),
        json!({"name": "search_sessions", "arguments": {"query": "healthz build"}}),
    )
    .await;
    let mut ids = Vec::new();
    for hit in found["result"]["structuredContent"]["data"]["results"]
        .as_array()
        .unwrap()
    {
        for key in ["session_id", "turn_id", "event_id"] {
            if let Some(id) = hit["open"][key].as_str() {
                ids.push(id.to_owned());
            }
        }
    }
    assert!(!ids.is_empty(), "the corpus gave no IDs to start from");
    let listed = call("tools/call", Some("list_sessions"), json!({"name": "list_sessions", "arguments": {"start_datetime": "2000-01-01T00:00:00Z", "end_datetime": "2100-01-01T00:00:00Z", "limit": 1}})).await;
    let cursor = listed["result"]["structuredContent"]["data"]["next_cursor"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Known { ids, cursor, tools }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_calls_get_spec_errors_and_nothing_breaks() {
    let calls: usize = std::env::var("MORAINE_FUZZ_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let seed: u64 = std::env::var("MORAINE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let (settings, db) = fresh_db().await;
    ingest_paths(&settings, &db, &fixtures()).await;
    let served = Served::start(&settings.clickhouse.url, &settings.clickhouse.database).await;
    let client = Arc::new(Client::builder(TokioExecutor::new()).build(HttpConnector::new()));
    let known = Arc::new(learn(&client, &served.url).await);

    let workers = 4;
    let warm_up = calls / 10;
    let started = Instant::now();
    let mut rss_after_warm_up = 0;
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    // Two rounds: the warm-up (caches, pools and allocator arenas reach their size), then the rest.
    for (round, count) in [(0u64, warm_up), (1, calls - warm_up)] {
        let mut tasks = Vec::new();
        for worker in 0..workers {
            let client = client.clone();
            let known = known.clone();
            let url = served.url.clone();
            let share = count / workers + usize::from(worker < count % workers);
            let mut rng = Rng(seed ^ (round << 32) ^ worker as u64);
            tasks.push(tokio::spawn(async move {
                let mut outcomes = Vec::with_capacity(share);
                for n in 0..share {
                    let case = if rng.chance(80) {
                        tool_call(&mut rng, &known, n)
                    } else {
                        malformed(&mut rng, &known, n)
                    };
                    let mut request = axum::http::Request::builder().method(case.method).uri(&url);
                    for (k, v) in &case.headers {
                        request = request.header(k, v);
                    }
                    let request = request
                        .body(Full::new(Bytes::from(case.body.clone())))
                        .unwrap();
                    let answered = tokio::time::timeout(Duration::from_secs(30), async {
                        let response = client
                            .request(request)
                            .await
                            .map_err(|e| format!("connection: {e}"))?;
                        let status = response.status().as_u16();
                        let content_type = response
                            .headers()
                            .get("content-type")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_owned();
                        let body = response
                            .into_body()
                            .collect()
                            .await
                            .map_err(|e| format!("body: {e}"))?
                            .to_bytes();
                        Ok::<_, String>((
                            status,
                            content_type,
                            String::from_utf8_lossy(&body).into_owned(),
                        ))
                    })
                    .await;
                    let outcome = match answered {
                        Err(_) => Err("no answer within 30 s".to_owned()),
                        Ok(Err(e)) => Err(e),
                        Ok(Ok((status, content_type, body))) => {
                            judge(&case, status, &content_type, &body)
                        }
                    };
                    outcomes.push(outcome.map_err(|e| {
                        format!("{e}\n  request: {} {}", case.method, clip(&case.body, 400))
                    }));
                }
                outcomes
            }));
        }
        for task in tasks {
            for outcome in task.await.unwrap() {
                match outcome {
                    Ok(Outcome::Result) => *tally.entry("result".into()).or_default() += 1,
                    Ok(Outcome::ToolError(code)) => *tally.entry(code).or_default() += 1,
                    Ok(Outcome::RpcError(code)) => {
                        *tally.entry(format!("jsonrpc {code}")).or_default() += 1;
                    }
                    Ok(Outcome::Status(status)) => {
                        *tally.entry(format!("http {status}")).or_default() += 1;
                    }
                    Err(failure) => failures.push(failure),
                }
            }
        }
        if round == 0 {
            rss_after_warm_up = served.rss_kib();
        }
    }
    let rss_at_end = served.rss_kib();
    let log = served.log();
    eprintln!(
        "fuzz: {calls} requests (seed {seed:#x}) in {:.1} s; {} failures; server RSS {} MiB after the warm-up, {} MiB at the end; {tally:?}",
        started.elapsed().as_secs_f64(),
        failures.len(),
        rss_after_warm_up / 1024,
        rss_at_end / 1024
    );
    assert!(
        failures.is_empty(),
        "{} failures, first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(!log.contains("panicked"), "the server panicked:\n{log}");
    assert!(
        tally.get("result").copied().unwrap_or(0) > calls / 20,
        "too few calls got through to a result: {tally:?}"
    );
    assert!(
        tally
            .keys()
            .filter(|k| DOCUMENTED.contains(&k.as_str()))
            .count()
            >= 3,
        "{tally:?}"
    );
    // Flat: what the warm-up grew to, give or take allocator slack, not growing with the count.
    assert!(
        rss_at_end <= rss_after_warm_up + rss_after_warm_up / 2 + 32 * 1024,
        "server RSS grew from {rss_after_warm_up} KiB to {rss_at_end} KiB"
    );
}
