//! Assembling the service: the search log, the tools, the HTTP router on a bound listener. The
//! one way the command line, the benchmark and the tests start it.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rmcp::ServiceExt as _;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::db::Db;
use crate::mcp::McpServer;
use crate::metrics::Metrics;
use crate::server;
use crate::tools::Tools;
use crate::tools::querylog::QueryLog;

/// How long a stopping service waits for the search log to write what it holds.
const QUERY_LOG_FLUSH: Duration = Duration::from_secs(5);

/// How often the service checks that ClickHouse answers (see `Db::watch_health`): with the
/// health timeout, how soon calls stop waiting on an engine that died or froze.
const HEALTH_WATCH: Duration = Duration::from_millis(250);

/// A running HTTP service.
pub struct App {
    addr: SocketAddr,
    mcp_path: String,
    server: JoinHandle<io::Result<()>>,
    query_log: Option<JoinHandle<()>>,
    /// Its pushes' write lease is given up once it has stopped.
    db: Db,
}

/// Starts the service on `listener`; it serves until `shutdown` is cancelled, then lets
/// in-flight requests finish for `server.shutdown_grace_secs`. The embedding model is fetched
/// first if it is not yet (see [`crate::semantic::ensure`]).
pub async fn spawn(
    config: Arc<Config>,
    db: Db,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> io::Result<App> {
    let addr = listener.local_addr()?;
    crate::semantic::ensure(&config.semantic)
        .await
        .map_err(io::Error::other)?;
    // A tokens file that cannot be read stops the start: serving without its tokens would
    // shut out everyone it names, and guessing at it could let in someone it revoked.
    let file = (!config.auth.tokens_file.is_empty())
        .then(|| crate::config::expand_home(&config.auth.tokens_file));
    let tokens = Arc::new(
        crate::auth::TokenStore::new(&config.auth.tokens, file)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
    );
    tokens.clone().watch(shutdown.clone());
    let (tools, query_log) = tools(&config, &db);
    tokio::spawn(crate::ingest::push::restore_push_metrics(db.clone()));
    tokio::spawn(crate::capacity::watch(db.clone(), shutdown.clone()));
    tokio::spawn(db.clone().watch_health(
        HEALTH_WATCH,
        Duration::from_millis(config.clickhouse.health_timeout_ms),
        shutdown.clone(),
    ));
    let router = server::router(&config, db.clone(), tools, tokens, addr, &shutdown);
    let limits = server::connection_limits(&config);
    let server = tokio::spawn(server::serve(listener, router, shutdown, limits));
    Ok(App {
        addr,
        mcp_path: config.server.mcp_path.clone(),
        server,
        query_log,
        db,
    })
}

impl App {
    /// The address the service listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint's URL.
    pub fn mcp_url(&self) -> String {
        format!("http://{}{}", self.addr, self.mcp_path)
    }

    /// Waits until the service has stopped, then for the search log to be written.
    pub async fn wait(self) -> io::Result<()> {
        let served = self
            .server
            .await
            .unwrap_or_else(|e| Err(io::Error::other(e)));
        if let Some(task) = self.query_log {
            let _ = tokio::time::timeout(QUERY_LOG_FLUSH, task).await;
        }
        self.db.release_writes().await;
        served
    }
}

/// A database handle once ClickHouse answers (within `clickhouse.startup_wait_secs`).
pub async fn connect(config: &Config) -> anyhow::Result<Db> {
    let db = Db::new(&config.clickhouse, Metrics::new(&config.sla));
    db.wait_until_ready(Duration::from_secs(config.clickhouse.startup_wait_secs))
        .await
        .with_context(|| format!("clickhouse at {} is unreachable", config.clickhouse.url))?;
    Ok(db)
}

/// Cancels `shutdown` on SIGTERM or SIGINT. Commands that serve call it first, before they
/// start anything, so that a stop signal at any moment of start-up or service ends them
/// gracefully (exit 0), never by the signal's default action.
pub fn stop_on_signal(shutdown: &CancellationToken) -> anyhow::Result<()> {
    server::cancel_on_signal(shutdown.clone()).context("cannot install signal handlers")
}

/// Serves MCP over HTTP on `server.listen` until `shutdown` (see [`stop_on_signal`]),
/// announcing the endpoint once it accepts requests.
pub async fn run(config: Arc<Config>, db: Db, shutdown: CancellationToken) -> anyhow::Result<()> {
    let addr = config.server.listen;
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    if shutdown.is_cancelled() {
        return Ok(());
    }
    let running = spawn(config.clone(), db, listener, shutdown).await?;
    let bound = running.addr();
    tracing::info!(address = %bound, path = %config.server.mcp_path, "serving MCP over HTTP");
    eprintln!(
        "moraine-mcp is serving MCP at {} (health: http://{bound}/healthz)",
        running.mcp_url()
    );
    if config.web.enabled {
        eprintln!("web pages for people: http://{bound}/ui/");
    }
    eprintln!("{}", access(&config, bound));
    if let Some(warning) = unnamed_host(&config) {
        tracing::warn!("{warning}");
        eprintln!("warning: {warning}");
    }
    running.wait().await?;
    Ok(())
}

/// Who may use the server, in a line: the token names, or a warning that anyone can.
fn access(config: &Config, bound: SocketAddr) -> String {
    let tokens = &config.auth.tokens;
    if tokens.is_empty() {
        return format!(
            "authentication is off: anyone who can reach {bound} can read every session \
             (set MORAINE_MCP_TOKEN or auth.tokens to require a token)"
        );
    }
    let names: Vec<&str> = tokens.iter().map(|t| t.name.as_str()).collect();
    format!(
        "authentication is on: {} token{} ({})",
        tokens.len(),
        if tokens.len() == 1 { "" } else { "s" },
        names.join(", ")
    )
}

/// A server reachable beyond loopback that knows no name for itself: agents reaching it by a
/// host name (through a proxy) would be refused until a setting names it.
fn unnamed_host(config: &Config) -> Option<String> {
    let server = &config.server;
    (!server.listen.ip().is_loopback()
        && server.public_url.is_empty()
        && server.allowed_hosts.is_empty())
    .then(|| {
        format!(
            "{} accepts MCP requests addressed to its IP address only; if agents reach it by a \
             host name (a TLS proxy in front), set server.public_url to the URL they use \
             ({}SERVER__PUBLIC_URL=https://moraine.example.com), or they get 403",
            server.listen,
            crate::config::ENV_PREFIX
        )
    })
}

/// Serves MCP over stdin/stdout until the input ends.
pub async fn serve_stdio(config: Arc<Config>, db: Db) -> anyhow::Result<()> {
    crate::semantic::ensure(&config.semantic).await?;
    let (tools, query_log) = tools(&config, &db);
    let running = McpServer::new(tools)
        .serve(rmcp::transport::stdio())
        .await?;
    running.waiting().await?;
    if let Some(task) = query_log {
        let _ = tokio::time::timeout(QUERY_LOG_FLUSH, task).await;
    }
    Ok(())
}

/// The tools, and the search-log writer task they feed (which ends once they are dropped).
fn tools(config: &Arc<Config>, db: &Db) -> (Arc<Tools>, Option<JoinHandle<()>>) {
    let (query_log, task) = QueryLog::start(db.clone(), config.tools.query_log);
    let tools = Tools::new(db.clone(), config.clone(), query_log);
    (Arc::new(tools), task)
}
