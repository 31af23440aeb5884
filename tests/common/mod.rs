//! Shared test harness: the real embedded ClickHouse, a fresh database per test, the real HTTP
//! server on 127.0.0.1:0, and a small MCP client that speaks both protocol styles.
#![allow(dead_code, unreachable_pub)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use moraine_mcp::config::{Config, Settings};
use moraine_mcp::db::Db;
use moraine_mcp::embedded::{Engine, Environment};
use moraine_mcp::metrics::Metrics;
use moraine_mcp::{app, ingest, migrate};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

pub const MODERN: &str = "2026-07-28";
pub const LEGACY: &str = "2025-11-25";

/// Where tests keep the engine's Python environment (shared by every test binary).
pub fn environment() -> Environment {
    static ENV: OnceLock<Environment> = OnceLock::new();
    ENV.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("engine-env");
        Environment::ensure(&dir, "python3").expect("the embedded engine environment installs")
    })
    .clone()
}

/// A data directory for an engine owned by this test process, clearing leftovers of earlier runs.
pub fn engine_dir(name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("engines");
    std::fs::create_dir_all(&root).unwrap();
    for entry in std::fs::read_dir(&root).unwrap().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = file.rsplit('-').next().and_then(|p| p.parse::<u32>().ok())
            && pid != std::process::id()
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    root.join(format!("{name}-{}", std::process::id()))
}

/// The engine shared by the tests of one test binary (it exits with the process).
pub fn shared_engine_url() -> String {
    static ENGINE: OnceLock<Mutex<Engine>> = OnceLock::new();
    let engine = ENGINE.get_or_init(|| {
        let dir = engine_dir("shared");
        Mutex::new(
            Engine::start(&environment(), &dir.join("db"), 0, &dir.join("engine.log"))
                .expect("engine starts"),
        )
    });
    engine.lock().unwrap().url()
}

/// Settings pointing at `url` with a database of its own.
pub fn config_for(url: &str) -> Settings {
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut config = Settings::default();
    config.clickhouse.url = url.to_owned();
    config.clickhouse.database = format!(
        "t{}_{}_{n}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    );
    config.clickhouse.startup_wait_secs = 20;
    config.server.listen = "127.0.0.1:0".parse().unwrap();
    config.server.shutdown_grace_secs = 5;
    config.ingest.batch_events = 500;
    // Never the real ~/.local/share/moraine-mcp: a data directory of the test's own.
    config.embedded.data_dir = std::env::temp_dir()
        .join(format!("moraine-data-{}-{n}", std::process::id()))
        .to_string_lossy()
        .into_owned();
    config.semantic.model_dir = model_dir();
    config
}

/// `settings` of a build that writes no session vectors, for a store a test keeps at a schema
/// before 13 (the service itself migrates every store to the newest schema before it writes).
pub fn without_vectors(mut settings: Settings) -> Settings {
    settings.semantic.enabled = false;
    settings
}

/// Where tests keep the embedding model (fetched once, shared by every test binary).
pub fn model_dir() -> String {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("model")
        .to_string_lossy()
        .into_owned()
}

/// A fresh, migrated database on the shared engine.
pub async fn fresh_db() -> (Settings, Db) {
    let config = config_for(&shared_engine_url());
    let db = Db::new(&config.clickhouse, Metrics::new(&config.sla));
    db.wait_until_ready(Duration::from_secs(30)).await.unwrap();
    migrate::migrate(&config.clickhouse, &db).await.unwrap();
    (config, db)
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
}

/// Copies the tree at `from` to `to`, calling `made` with each file copied (hidden files too).
#[allow(dead_code)]
pub fn copy_tree(from: &Path, to: &Path, made: &mut dyn FnMut(&Path)) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target, made);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            made(&target);
        }
    }
}

/// Ingests a file or a directory into `db`.
pub async fn ingest_paths(config: &Settings, db: &Db, path: &Path) -> ingest::Summary {
    let (files, problems) = ingest::files::from_paths(&[path.to_owned()], None, None);
    assert!(problems.is_empty(), "{problems:?}");
    let config = config.clone().validate().unwrap();
    ingest::run(&config, db, files, false).await.unwrap()
}

/// A small deterministic generator (SplitMix64): what a test generates is reproduced from its
/// seed.
#[allow(dead_code)]
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The format fixtures (`tests/formats`) copied under `dir`, each SQLite store built from its
/// `<store>.sql` script (which is not copied).
#[allow(dead_code)]
pub fn copy_formats(dir: &Path) {
    let formats = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("formats");
    copy_tree(&formats, dir, &mut |path| {
        let name = path.to_string_lossy();
        if let Some(store) = name.strip_suffix(".sql") {
            let sql = std::fs::read_to_string(path).unwrap();
            rusqlite::Connection::open(store)
                .unwrap()
                .execute_batch(&sql)
                .unwrap();
            std::fs::remove_file(path).unwrap();
        }
    });
}

/// The bundled demo, written out (its stores built) under `dir`, as the logs `up` loads.
#[allow(dead_code)]
pub fn demo_logs(dir: &Path, source: Option<&str>) -> Vec<ingest::files::LogFile> {
    let mut logs = Vec::new();
    for (harness, root) in moraine_mcp::demo::write_to(dir).unwrap() {
        let (found, problems) = ingest::files::from_paths(&[root], Some(harness), source);
        assert!(problems.is_empty(), "{problems:?}");
        logs.extend(found);
    }
    logs
}

/// A running server on 127.0.0.1:0.
pub struct TestServer {
    pub base: String,
    pub mcp_url: String,
    pub db: Db,
    pub config: Arc<Config>,
    shutdown: CancellationToken,
    app: app::App,
}

impl TestServer {
    /// Starts the service as the command line does (`app::spawn`), with `settings` validated.
    pub async fn start(settings: Settings, db: Db) -> Self {
        let config = Arc::new(settings.validate().expect("valid test settings"));
        let listener = tokio::net::TcpListener::bind(config.server.listen)
            .await
            .unwrap();
        let shutdown = CancellationToken::new();
        let running = app::spawn(config.clone(), db.clone(), listener, shutdown.clone())
            .await
            .unwrap();
        let base = format!("http://{}", running.addr());
        Self {
            mcp_url: running.mcp_url(),
            base,
            db,
            config,
            shutdown,
            app: running,
        }
    }

    /// A server over a fresh database holding every fixture.
    pub async fn with_fixtures() -> Self {
        let (config, db) = fresh_db().await;
        ingest_paths(&config, &db, &fixtures()).await;
        Self::start(config, db).await
    }

    pub async fn stop(self) {
        self.shutdown.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(10), self.app.wait()).await;
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: String,
}

impl Reply {
    /// What a `tools/call` got, in a word: `ok`, the tool error's code, or `http <status>`.
    pub fn tool_outcome(&self) -> String {
        if self.status != 200 {
            return format!("http {}", self.status);
        }
        let result = &self.json()["result"];
        if result["isError"] == true {
            result["structuredContent"]["error"]["code"]
                .as_str()
                .unwrap_or("no code")
                .to_owned()
        } else {
            "ok".to_owned()
        }
    }

    pub fn json(&self) -> Value {
        let content_type = self.headers.get("content-type").map_or("", String::as_str);
        let text = message_text(content_type, &self.body)
            .unwrap_or_else(|| panic!("no JSON in SSE body: {}", self.body));
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }
}

/// The JSON-RPC message of a response body: the body itself, or in an event stream the last
/// `data:` line carrying an object (`None` when there is none).
pub fn message_text<'a>(content_type: &str, body: &'a str) -> Option<&'a str> {
    if !content_type.starts_with("text/event-stream") {
        return Some(body);
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|l| l.starts_with('{'))
}

pub fn http() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build(HttpConnector::new())
}

/// The status of a GET, or `None` when nothing answers (yet).
pub async fn try_get(url: &str) -> Option<u16> {
    let request = axum::http::Request::get(url)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = tokio::time::timeout(Duration::from_secs(2), http().request(request)).await;
    response.ok()?.ok().map(|r| r.status().as_u16())
}

/// The sum of metric `name` in a `/metrics` page over its series carrying every one of
/// `labels` (`key="value"`).
pub fn metric_sum(page: &str, name: &str, labels: &[&str]) -> f64 {
    page.lines()
        .filter(|l| l.starts_with(name) && labels.iter().all(|label| l.contains(label)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Sends one HTTP request.
pub async fn send(method: &str, url: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    send_bytes(method, url, headers, body.as_bytes().to_vec()).await
}

/// [`send`] with a body of any bytes.
pub async fn send_bytes(method: &str, url: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Reply {
    let mut request = axum::http::Request::builder().method(method).uri(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::from(body))).unwrap();
    let response = http().request(request).await.expect("http request");
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                v.to_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// A minimal MCP client over Streamable HTTP, in the 2025-11-25 style (initialize, optional
/// session) or the 2026-07-28 style (stateless, `_meta` and `Mcp-*` headers on every request).
/// Every tool result it receives is checked against the tool's published output schema.
pub struct Mcp {
    url: String,
    modern: bool,
    session: Option<String>,
    token: Option<String>,
    next_id: u64,
    output_schemas: HashMap<String, Arc<jsonschema::Validator>>,
}

impl Mcp {
    /// Connects in the 2025-11-25 style: initialize, then notifications/initialized.
    pub async fn legacy(url: &str, token: Option<&str>) -> Self {
        let mut client = Self::bare(url, token, false);
        let init = client
            .post(
                "initialize",
                None,
                json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "tests", "version": "0"}}),
            )
            .await;
        assert_eq!(init.status, 200, "{init:?}");
        client.session = init.headers.get("mcp-session-id").cloned();
        let result = init.json();
        assert_eq!(result["result"]["protocolVersion"], LEGACY, "{result}");
        let note = client.notify("notifications/initialized").await;
        assert_eq!(note.status, 202, "{note:?}");
        client.load_schemas().await;
        client
    }

    /// A 2026-07-28 client: no handshake.
    pub async fn modern(url: &str, token: Option<&str>) -> Self {
        let mut client = Self::bare(url, token, true);
        client.load_schemas().await;
        client
    }

    fn bare(url: &str, token: Option<&str>, modern: bool) -> Self {
        Self {
            url: url.to_owned(),
            modern,
            session: None,
            token: token.map(str::to_owned),
            next_id: 1,
            output_schemas: HashMap::new(),
        }
    }

    async fn load_schemas(&mut self) {
        let list = self.request("tools/list", None, json!({})).await;
        for tool in list["result"]["tools"].as_array().expect("tools") {
            let schema = tool["outputSchema"].clone();
            self.output_schemas.insert(
                tool["name"].as_str().unwrap().to_owned(),
                Arc::new(jsonschema::validator_for(&schema).expect("output schema compiles")),
            );
        }
    }

    fn headers(&self, method: &str, name: Option<&str>) -> Vec<(String, String)> {
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            (
                "accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
        ];
        if let Some(token) = &self.token {
            headers.push(("authorization".into(), format!("Bearer {token}")));
        }
        if self.modern {
            headers.push(("mcp-protocol-version".into(), MODERN.into()));
            headers.push(("mcp-method".into(), method.into()));
            if let Some(name) = name {
                headers.push(("mcp-name".into(), name.into()));
            }
        } else if method != "initialize" {
            headers.push(("mcp-protocol-version".into(), LEGACY.into()));
            if let Some(session) = &self.session {
                headers.push(("mcp-session-id".into(), session.clone()));
            }
        }
        headers
    }

    async fn post(&mut self, method: &str, name: Option<&str>, mut params: Value) -> Reply {
        if self.modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        let id = self.next_id;
        self.next_id += 1;
        let body =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        let headers = self.headers(method, name);
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        send("POST", &self.url, &headers, &body).await
    }

    async fn notify(&mut self, method: &str) -> Reply {
        let body = json!({"jsonrpc": "2.0", "method": method}).to_string();
        let headers = self.headers(method, None);
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        send("POST", &self.url, &headers, &body).await
    }

    /// A JSON-RPC request; returns the whole response message.
    pub async fn request(&mut self, method: &str, name: Option<&str>, params: Value) -> Value {
        let reply = self.post(method, name, params).await;
        assert_eq!(reply.status, 200, "{method}: {reply:?}");
        reply.json()
    }

    /// `tools/call`; returns the result after checking `structuredContent` against the
    /// published output schema.
    pub async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let message = self
            .request(
                "tools/call",
                Some(tool),
                json!({"name": tool, "arguments": arguments}),
            )
            .await;
        let result = message
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("no result: {message}"));
        let structured = &result["structuredContent"];
        let validator = self.output_schemas.get(tool).expect("known tool");
        let errors: Vec<String> = validator
            .iter_errors(structured)
            .map(|e| format!("{} at {}", e, e.instance_path().as_str()))
            .collect();
        assert!(
            errors.is_empty(),
            "{tool} response breaks its published output schema: {errors:?}\n{structured:#}"
        );
        assert!(
            result["content"][0]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty()),
            "{result}"
        );
        result
    }

    /// `tools/call` as it comes back, whatever the status: for tests of outages and overload.
    pub async fn call_raw(&mut self, tool: &str, arguments: Value) -> Reply {
        self.post(
            "tools/call",
            Some(tool),
            json!({"name": tool, "arguments": arguments}),
        )
        .await
    }

    /// `tools/call` that must succeed; returns `structuredContent`.
    pub async fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments.clone()).await;
        assert_eq!(
            result["isError"], false,
            "{tool} {arguments} failed: {result:#}"
        );
        result["structuredContent"].clone()
    }

    /// `tools/call` that must fail in-band; returns the error code and the envelope.
    pub async fn err(&mut self, tool: &str, arguments: Value) -> (String, Value) {
        let result = self.call(tool, arguments.clone()).await;
        assert_eq!(
            result["isError"], true,
            "{tool} {arguments} should fail: {result:#}"
        );
        let envelope = result["structuredContent"].clone();
        assert_eq!(envelope["schema_version"], "moraine.mcp.error.v1");
        (
            envelope["error"]["code"].as_str().unwrap().to_owned(),
            envelope,
        )
    }
}

/// A server over the fixtures, shared by every test of a binary. It runs on a runtime of its
/// own, since each `#[tokio::test]` has a runtime that ends with the test.
pub struct Shared {
    pub mcp_url: String,
    pub base: String,
    pub config: Settings,
}

pub fn shared_fixture_server() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let server = TestServer::with_fixtures().await;
                tx.send(Shared {
                    mcp_url: server.mcp_url.clone(),
                    base: server.base.clone(),
                    config: server.config.settings(),
                })
                .unwrap();
                std::future::pending::<()>().await;
            });
        });
        rx.recv().unwrap()
    })
}

/// A database handle on the shared server's database, usable from any runtime.
pub fn shared_db() -> Db {
    let shared = shared_fixture_server();
    Db::new(&shared.config.clickhouse, Metrics::new(&shared.config.sla))
}

/// The status line and headers of one raw HTTP/1.1 exchange. Raw, so a request can declare a
/// body it never sends, stall, or open a stream that never ends.
pub struct Head {
    pub status: u16,
    pub headers: BTreeMap<String, String>,
}

pub async fn exchange(addr: &str, request: &str) -> Head {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    // The server may answer and close before reading everything; that is not a failure here.
    let _ = stream.write_all(request.as_bytes()).await;
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let read = tokio::time::timeout(Duration::from_secs(15), stream.read(&mut chunk))
            .await
            .expect("no response head within 15 s")
            .unwrap_or(0);
        assert!(
            read > 0,
            "connection closed before a response head: {request}"
        );
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Head { status, headers }
}

/// A request as sent on the wire. `body` sets Content-Length unless `headers` declares one.
pub fn request(
    method: &str,
    addr: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> String {
    let mut text = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty()
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-length"))
    {
        text.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    text.push_str("\r\n");
    text.push_str(body);
    text
}

#[derive(Debug, PartialEq, clickhouse::Row, serde::Deserialize)]
pub struct TurnFacts {
    pub session_key: u64,
    pub ordinal: u32,
    pub completed: bool,
    pub terminal_event_key: u64,
    pub event_count: u32,
    pub user_event_key: u64,
    pub final_event_key: u64,
    pub tools_called: Vec<String>,
}

/// (session, event, turn ordinal, ordinal, type, text, raw, doc_len, searchable)
pub type EventFacts = (u64, u64, u32, u32, u8, String, String, u16, bool);
/// (session, title, turns, events, completed, mode, started_at, updated_at)
pub type SessionFacts = (u64, String, u32, u32, bool, String, i64, i64);

/// Everything ingest stored, in a comparable form (row versions excluded).
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    pub events: Vec<EventFacts>,
    pub turns: Vec<TurnFacts>,
    pub sessions: Vec<SessionFacts>,
    pub postings: Vec<(u64, u64, u64, u16, u16, u8)>,
    /// Document frequency per (term, event type).
    pub term_df: Vec<(u64, u8, i64)>,
    /// Documents and their total length per event type.
    pub corpus: Vec<(u8, i64, i64)>,
    /// Each session's vector.
    pub session_vectors: Vec<SessionVector>,
}

#[derive(Debug, PartialEq, clickhouse::Row, serde::Deserialize)]
pub struct SessionVector {
    pub sess: u64,
    pub vector: Vec<f32>,
}

pub async fn snapshot(db: &Db) -> Snapshot {
    let d = || db.default_deadline();
    // Tables and columns the store's schema may predate.
    let holds = async |sql: &str| -> bool {
        db.read("t", sql)
            .fetch_optional(db, d())
            .await
            .unwrap()
            .unwrap_or(false)
    };
    let typed = holds("SELECT count() > 0 FROM system.columns WHERE database = currentDatabase() AND table = 'term_df' AND name = 'event_type'").await;
    let vectors = holds("SELECT count() > 0 FROM system.tables WHERE database = currentDatabase() AND name = 'session_vectors'").await;
    Snapshot {
        events: db
            .read("t", "SELECT session_key, event_key, turn_ordinal, ordinal, toUInt8(event_type), text, raw, doc_len, searchable FROM events ORDER BY session_key, turn_ordinal, ordinal")
            .fetch_all(db, d())
            .await
            .unwrap(),
        turns: db
            .read("t", "SELECT session_key, ordinal, completed, terminal_event_key, event_count, user_event_key, final_event_key, tools_called FROM turns FINAL ORDER BY session_key, ordinal")
            .fetch_all(db, d())
            .await
            .unwrap(),
        sessions: db
            .read("t", "SELECT session_key, title, turn_count, event_count, completed, mode, started_at, updated_at FROM sessions FINAL ORDER BY session_key")
            .fetch_all(db, d())
            .await
            .unwrap(),
        postings: db
            .read("t", "SELECT term, sess, doc, tf, doc_len, kind FROM postings ORDER BY term, sess, doc")
            .fetch_all(db, d())
            .await
            .unwrap(),
        // Before migration 011 the statistics had no event type: read as type 0.
        term_df: db
            .read("t", if typed { "SELECT term, event_type, sum(df) AS n FROM term_df GROUP BY term, event_type HAVING n != 0 ORDER BY term, event_type" } else { "SELECT term, toUInt8(0), sum(df) AS n FROM term_df GROUP BY term HAVING n != 0 ORDER BY term" })
            .fetch_all(db, d())
            .await
            .unwrap(),
        corpus: db
            .read("t", if typed { "SELECT event_type, sum(docs) AS n, sum(total_len) FROM corpus_stats GROUP BY event_type HAVING n != 0 ORDER BY event_type" } else { "SELECT toUInt8(0), sum(docs) AS n, sum(total_len) FROM corpus_stats HAVING n != 0" })
            .fetch_all(db, d())
            .await
            .unwrap(),
        session_vectors: if vectors {
            db.read("t", "SELECT sess, vector FROM session_vectors FINAL ORDER BY sess")
                .fetch_all(db, d())
                .await
                .unwrap()
        } else {
            Vec::new()
        },
    }
}

impl Snapshot {
    /// Panics naming what differs from `reference` — which table, how many rows, the first
    /// rows that differ — rather than printing two whole stores.
    pub fn assert_same_as(&self, reference: &Self) {
        fn first_difference<T: std::fmt::Debug + PartialEq>(
            table: &str,
            got: &[T],
            want: &[T],
        ) -> Option<String> {
            if got == want {
                return None;
            }
            let at = got
                .iter()
                .zip(want)
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(want.len()));
            Some(format!(
                "{table}: {} rows, {} expected; first difference at row {at}: {:?} vs {:?}",
                got.len(),
                want.len(),
                got.get(at),
                want.get(at)
            ))
        }
        let differences: Vec<String> = [
            first_difference("events", &self.events, &reference.events),
            first_difference("turns", &self.turns, &reference.turns),
            first_difference("sessions", &self.sessions, &reference.sessions),
            first_difference("postings", &self.postings, &reference.postings),
            first_difference("term_df", &self.term_df, &reference.term_df),
            first_difference("corpus_stats", &self.corpus, &reference.corpus),
            first_difference(
                "session_vectors",
                &self.session_vectors,
                &reference.session_vectors,
            ),
        ]
        .into_iter()
        .flatten()
        .collect();
        assert!(
            differences.is_empty(),
            "the store differs:\n{}",
            differences.join("\n")
        );
    }
}

/// The statistics equal what the postings imply, the postings index exactly the stored events
/// (no double counting, nothing lost), and every session vector is a stored session's.
pub fn assert_statistics_exact(s: &Snapshot) {
    assert_postings_index_the_events(s);
    assert_vectors_are_stored_sessions(s);
    let mut df: BTreeMap<(u64, u8), i64> = BTreeMap::new();
    for posting in &s.postings {
        *df.entry((posting.0, posting.5 % 128)).or_default() += 1;
    }
    let df: Vec<(u64, u8, i64)> = df.into_iter().map(|((t, k), n)| (t, k, n)).collect();
    assert_eq!(s.term_df, df);
    let mut corpus: BTreeMap<u8, (i64, i64)> = BTreeMap::new();
    for event in s.events.iter().filter(|e| e.8) {
        let entry = corpus.entry(event.4).or_default();
        entry.0 += 1;
        entry.1 += i64::from(event.7);
    }
    let corpus: Vec<(u8, i64, i64)> = corpus.into_iter().map(|(k, (n, l))| (k, n, l)).collect();
    assert_eq!(s.corpus, corpus);
}

/// Each session vector is a stored session's, and has length 1.
pub fn assert_vectors_are_stored_sessions(s: &Snapshot) {
    let sessions: HashSet<u64> = s.sessions.iter().map(|session| session.0).collect();
    for SessionVector { sess, vector } in &s.session_vectors {
        assert!(
            sessions.contains(sess),
            "a vector of session {sess}, which is not stored"
        );
        let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
        assert!(
            (norm - 1.0).abs() < 1e-3,
            "session {sess}'s vector has length {norm}"
        );
    }
}

/// Each term of a document is posted once, every posting names a stored searchable event, and
/// every searchable event with words has postings. Says how many postings break which rule, so
/// a failure tells a store that holds a batch twice from one that lost a batch.
pub fn assert_postings_index_the_events(s: &Snapshot) {
    // An event key is unique within its session only: documents are named by both.
    let mut seen: HashSet<(u64, u64, u64)> = HashSet::with_capacity(s.postings.len());
    let mut twice = Vec::new();
    for p in &s.postings {
        if !seen.insert((p.0, p.1, p.2)) {
            twice.push(p);
        }
    }
    let posted: HashSet<(u64, u64)> = s.postings.iter().map(|p| (p.1, p.2)).collect();
    let searchable: HashSet<(u64, u64)> = s
        .events
        .iter()
        .filter(|e| e.8)
        .map(|e| (e.0, e.1))
        .collect();
    let orphans: Vec<&(u64, u64)> = posted.iter().filter(|d| !searchable.contains(d)).collect();
    let unindexed: Vec<(u64, u64)> = s
        .events
        .iter()
        .filter(|e| e.8 && e.7 > 0 && !posted.contains(&(e.0, e.1)))
        .map(|e| (e.0, e.1))
        .collect();
    assert!(
        twice.is_empty() && orphans.is_empty() && unindexed.is_empty(),
        "the postings do not index the events: {} postings stored twice (first {:?}), {} \
         documents posted that are no searchable event (first {:?}), {} searchable events \
         without postings (first {:?}); {} postings, {} events",
        twice.len(),
        twice.first(),
        orphans.len(),
        orphans.first(),
        unindexed.len(),
        unindexed.first(),
        s.postings.len(),
        s.events.len(),
    );
}

/// Writes `sessions` Claude Code sessions under `dir`, each of `turns` turns whose prompts and
/// answers hold `word`; session IDs are derived from `prefix`, so trees never share sessions.
pub fn write_sessions(dir: &Path, prefix: u32, sessions: u32, turns: u32, word: &str) {
    use std::io::Write as _;
    let project = dir.join("projects").join("-home-dev-src-team");
    std::fs::create_dir_all(&project).unwrap();
    for s in 0..sessions {
        let id = format!(
            "{prefix:08x}-{s:04x}-4000-8000-{:012x}",
            u64::from(prefix) * 1000 + u64::from(s)
        );
        let mut file = std::fs::File::create(project.join(format!("{id}.jsonl"))).unwrap();
        let mut second = 0u32;
        for t in 0..turns {
            let mut ts = || {
                second += 1;
                format!(
                    "2026-05-{:02}T{:02}:{:02}:{:02}.000Z",
                    1 + s % 28,
                    (second / 3600) % 24,
                    (second / 60) % 60,
                    second % 60
                )
            };
            let lines = [
                json!({"type": "user", "sessionId": id, "timestamp": ts(), "cwd": "/home/dev/src/team",
                    "message": {"role": "user", "content": format!("{word} question {t} about the build of service {s}")}}),
                json!({"type": "assistant", "sessionId": id, "timestamp": ts(),
                    "message": {"model": "m", "stop_reason": "tool_use", "content": [
                        {"type": "tool_use", "id": format!("t{t}"), "name": "Bash", "input": {"command": format!("make test-{t}")}}]}}),
                json!({"type": "user", "sessionId": id, "timestamp": ts(),
                    "message": {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": format!("t{t}"), "content": format!("ok {word} {}", "build output line ".repeat(20))}]}}),
                json!({"type": "assistant", "sessionId": id, "timestamp": ts(),
                    "message": {"model": "m", "stop_reason": "end_turn", "content": [{"type": "text", "text": format!("{word} answer {t}")}]}}),
            ];
            for line in lines {
                writeln!(file, "{line}").unwrap();
            }
        }
    }
}
