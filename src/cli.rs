//! The `moraine-mcp` command line: serve, migrate, up, ingest, bench and healthcheck.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{Parser, Subcommand};
use rmcp::ServiceExt as _;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, expand_home};
use crate::db::Db;
use crate::embedded::{Engine, Environment};
use crate::ingest::{self, files};
use crate::mcp::McpServer;
use crate::metrics::Metrics;
use crate::telemetry::Telemetry;
use crate::tools::Tools;
use crate::tools::querylog::QueryLog;
use crate::{demo, migrate, server};

#[derive(Debug, Parser)]
#[command(
    name = "moraine-mcp",
    version,
    about = "Session search for AI coding agents, served over MCP"
)]
pub struct Cli {
    /// Configuration file (see config/moraine-mcp.toml); defaults apply without one.
    #[arg(long, short, env = "MORAINE_MCP_CONFIG", global = true)]
    config: Option<PathBuf>,
    /// Address to listen on (server.listen).
    #[arg(long, global = true)]
    listen: Option<String>,
    /// ClickHouse HTTP URL (clickhouse.url).
    #[arg(long, global = true)]
    clickhouse_url: Option<String>,
    /// ClickHouse database (clickhouse.database).
    #[arg(long, global = true)]
    database: Option<String>,
    /// Log format: text or json (telemetry.log_format).
    #[arg(long, global = true)]
    log_format: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP over Streamable HTTP (or over stdio with --stdio).
    Serve {
        /// Speak MCP over stdin/stdout instead of HTTP, for hosts that start the server locally.
        #[arg(long)]
        stdio: bool,
        /// Exit if ClickHouse cannot be reached at start-up instead of serving and retrying.
        #[arg(long)]
        require_clickhouse: bool,
    },
    /// Create the database and apply pending schema migrations.
    Migrate,
    /// Run everything on one machine: start the embedded ClickHouse, migrate, ingest local agent
    /// logs (or the demo sessions), and serve. Stops the engine on exit.
    Up {
        /// Where the embedded engine keeps its data (embedded.data_dir).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Loopback port of the embedded engine (embedded.port).
        #[arg(long)]
        engine_port: Option<u16>,
        /// Skip ingesting local agent logs.
        #[arg(long)]
        no_ingest: bool,
    },
    /// Measure ingest and every SLA row through HTTP MCP on generated corpora (not a test).
    Bench(crate::bench::BenchArgs),
    /// Exit 0 when the server's /healthz answers 200 (for container health checks).
    Healthcheck {
        /// The health URL (default: /healthz on the listen address, via loopback).
        #[arg(long)]
        url: Option<String>,
    },
    /// Ingest session logs: the given files and directories, or the configured sources.
    Ingest {
        /// Log files or directories; none means the configured sources (~/.codex, ~/.claude).
        paths: Vec<PathBuf>,
        /// The harness that wrote the given files: codex or claude-code (default: detect).
        #[arg(long)]
        harness: Option<String>,
        /// Source name recorded for the given files (default: codex or claude).
        #[arg(long)]
        source: Option<String>,
        /// Hide the progress bar.
        #[arg(long)]
        no_progress: bool,
    },
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match load_config(&cli) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let telemetry = match Telemetry::init(&config.telemetry) {
            Ok(telemetry) => telemetry,
            Err(e) => {
                eprintln!("error: cannot set up logging: {e:#}");
                return ExitCode::FAILURE;
            }
        };
        let result = run(cli.command, config).await;
        telemetry.shutdown().await;
        match result {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        }
    })
}

fn load_config(cli: &Cli) -> anyhow::Result<Config> {
    let env: HashMap<String, String> = std::env::vars().collect();
    let mut config = Config::load_unvalidated(cli.config.as_deref(), &env)?;
    if let Some(listen) = &cli.listen {
        config.server.listen = listen.clone();
    }
    if let Some(url) = &cli.clickhouse_url {
        config.clickhouse.url = url.clone();
    }
    if let Some(database) = &cli.database {
        config.clickhouse.database = database.clone();
    }
    if let Some(format) = &cli.log_format {
        config.telemetry.log_format = format.clone();
    }
    if let Command::Up {
        data_dir,
        engine_port,
        ..
    } = &cli.command
    {
        if let Some(dir) = data_dir {
            config.embedded.data_dir = dir.to_string_lossy().into_owned();
        }
        if let Some(port) = engine_port {
            config.embedded.port = *port;
        }
    }
    config.validate()?;
    Ok(config)
}

async fn run(command: Command, config: Config) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve {
            stdio,
            require_clickhouse,
        } => {
            serve(Arc::new(config), stdio, require_clickhouse).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Migrate => {
            let db = connected(&config).await?;
            let report = migrate::migrate(&config.clickhouse, &db).await?;
            println!(
                "schema version {}: applied {:?}, already applied {:?}",
                migrate::latest_version(),
                report.applied,
                report.already
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Up { no_ingest, .. } => up(config, no_ingest).await,
        Command::Healthcheck { url } => healthcheck(&config, url).await,
        Command::Bench(args) => crate::bench::run(args, config).await,
        Command::Ingest {
            paths,
            harness,
            source,
            no_progress,
        } => {
            let harness = match harness.as_deref() {
                None => None,
                Some(name) => Some(files::Harness::parse(name).with_context(|| {
                    format!("unknown harness {name:?}: use codex or claude-code")
                })?),
            };
            let db = connected(&config).await?;
            migrate::migrate(&config.clickhouse, &db).await?;
            let (logs, problems) = if paths.is_empty() {
                files::from_sources(&config.ingest.sources)
            } else {
                files::from_paths(&paths, harness, source.as_deref())
            };
            for problem in &problems {
                eprintln!("warning: {problem}");
            }
            if logs.is_empty() {
                eprintln!("no session logs found");
                return Ok(if problems.is_empty() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                });
            }
            let summary = ingest::run(&config, &db, logs, !no_progress).await?;
            println!("ingested {summary}");
            Ok(if summary.nothing_ingested() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

/// GETs the health endpoint; healthy only on 200.
async fn healthcheck(config: &Config, url: Option<String>) -> anyhow::Result<ExitCode> {
    let url = url.unwrap_or_else(|| {
        let addr = config.server.listen_addr();
        let ip = if addr.ip().is_unspecified() {
            Ipv4Addr::LOCALHOST.into()
        } else {
            addr.ip()
        };
        format!("http://{}/healthz", SocketAddr::new(ip, addr.port()))
    });
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<bytes::Bytes>>();
    let uri: axum::http::Uri = url.parse().with_context(|| format!("bad URL {url:?}"))?;
    let response = tokio::time::timeout(Duration::from_secs(5), client.get(uri))
        .await
        .context("no answer within 5 s")?
        .with_context(|| format!("cannot reach {url}"))?;
    let status = response.status();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await?
        .to_bytes();
    println!("{} {}", status.as_u16(), String::from_utf8_lossy(&body));
    Ok(if status.is_success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// A database handle once ClickHouse answers.
async fn connected(config: &Config) -> anyhow::Result<Db> {
    let db = Db::new(&config.clickhouse, Metrics::new(&config.sla));
    db.wait_until_ready(Duration::from_secs(config.clickhouse.startup_wait_secs))
        .await
        .with_context(|| format!("clickhouse at {} is unreachable", config.clickhouse.url))?;
    Ok(db)
}

async fn serve(config: Arc<Config>, stdio: bool, require_clickhouse: bool) -> anyhow::Result<()> {
    let db = Db::new(&config.clickhouse, Metrics::new(&config.sla));
    match db
        .wait_until_ready(Duration::from_secs(config.clickhouse.startup_wait_secs))
        .await
    {
        Ok(()) => tracing::info!(url = %config.clickhouse.url, "clickhouse is reachable"),
        Err(e) if require_clickhouse => bail!(
            "clickhouse at {} is unreachable: {e}",
            config.clickhouse.url
        ),
        Err(e) => {
            tracing::warn!(error = %e, "clickhouse is unreachable; serving anyway, /healthz reports it")
        }
    }
    run_server(config, db, stdio, CancellationToken::new()).await
}

/// Serves MCP until a signal (HTTP) or the end of input (stdio), then flushes the search log.
async fn run_server(
    config: Arc<Config>,
    db: Db,
    stdio: bool,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let (query_log, log_task) = QueryLog::start(db.clone(), config.tools.query_log);
    let tools = Arc::new(Tools::new(db.clone(), config.clone(), query_log));
    if stdio {
        let running = McpServer::new(tools)
            .serve(rmcp::transport::stdio())
            .await?;
        running.waiting().await?;
    } else {
        let addr = config.server.listen_addr();
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let bound = listener.local_addr()?;
        let app = server::router(&config, db, tools, bound, &shutdown);
        server::cancel_on_signal(shutdown.clone());
        tracing::info!(address = %bound, path = %config.server.mcp_path, "serving MCP over HTTP");
        eprintln!(
            "moraine-mcp is serving MCP at http://{bound}{} (health: http://{bound}/healthz)",
            config.server.mcp_path
        );
        server::serve(
            listener,
            app,
            shutdown,
            Duration::from_secs(config.server.shutdown_grace_secs),
        )
        .await?;
    }
    if let Some(task) = log_task {
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }
    Ok(())
}

/// Embedded engine, migrations, local logs (or the demo), then the server.
async fn up(mut config: Config, no_ingest: bool) -> anyhow::Result<ExitCode> {
    let data_dir = config.embedded.data_dir_path();
    let python = config.embedded.python.clone();
    let engine_dir = data_dir.join("engine");
    let environment =
        tokio::task::spawn_blocking(move || Environment::ensure(&engine_dir, &python)).await??;
    let (db_dir, log_path, port) = (
        data_dir.join("db"),
        data_dir.join("engine.log"),
        config.embedded.port,
    );
    let mut engine =
        tokio::task::spawn_blocking(move || Engine::start(&environment, &db_dir, port, &log_path))
            .await??;
    eprintln!(
        "embedded ClickHouse is running on {} (data in {})",
        engine.url(),
        data_dir.display()
    );
    config.clickhouse.url = engine.url();
    // Loopback: compressing costs more CPU than it saves.
    config.clickhouse.compression = "none".into();
    let config = Arc::new(config);
    let result = async {
        let db = connected(&config).await?;
        migrate::migrate(&config.clickhouse, &db).await?;
        let shutdown = CancellationToken::new();
        if !no_ingest {
            ingest_local(&config, &db, &data_dir, true).await?;
            let interval = config.ingest.interval_secs;
            if interval > 0 {
                let (config, db, data_dir, stop) = (
                    config.clone(),
                    db.clone(),
                    data_dir.clone(),
                    shutdown.clone(),
                );
                tokio::spawn(async move {
                    loop {
                        tokio::select! {
                            _ = stop.cancelled() => return,
                            _ = tokio::time::sleep(Duration::from_secs(interval)) => {}
                        }
                        if let Err(e) = ingest_local(&config, &db, &data_dir, false).await {
                            tracing::warn!(error = %e, "periodic ingest failed; will retry");
                        }
                    }
                });
            }
        }
        run_server(config.clone(), db, false, shutdown).await
    }
    .await;
    tokio::task::spawn_blocking(move || engine.stop()).await?;
    result.map(|()| ExitCode::SUCCESS)
}

/// Ingests the configured sources, or the bundled demo sessions when there are none.
async fn ingest_local(
    config: &Config,
    db: &Db,
    data_dir: &std::path::Path,
    announce: bool,
) -> anyhow::Result<()> {
    let (mut logs, problems) = files::from_sources(&config.ingest.sources);
    for problem in &problems {
        tracing::warn!(%problem, "skipping a log source");
    }
    if logs.is_empty() && config.embedded.demo_when_empty {
        let demo_dir = data_dir.join("demo");
        let (codex, claude) = demo::write_to(&demo_dir)?;
        let (mut found, _) = files::from_paths(&[codex], Some(files::Harness::Codex), Some("demo"));
        let (claude_found, _) =
            files::from_paths(&[claude], Some(files::Harness::ClaudeCode), Some("demo"));
        found.extend(claude_found);
        if announce {
            eprintln!(
                "no agent logs found under {}; loading {} demo sessions (`moraine-mcp ingest <path>` adds your own)",
                config
                    .ingest
                    .sources
                    .iter()
                    .map(|s| expand_home(&s.glob).display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                found.len()
            );
        }
        logs = found;
    }
    if logs.is_empty() {
        return Ok(());
    }
    let summary = ingest::run(config, db, logs, announce).await?;
    if announce || summary.counters.events > 0 {
        tracing::info!(%summary, "ingested");
    }
    if announce {
        eprintln!("ingested {summary}");
    }
    Ok(())
}
