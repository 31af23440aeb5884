//! `moraine-mcp up`: everything on one machine. Starts the embedded ClickHouse, migrates, ingests
//! the local agent logs (or the demo sessions) and keeps ingesting them, and serves MCP; stops
//! the engine on the way out.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::{Compression, Config, expand_home};
use crate::db::Db;
use crate::embedded::{Engine, Environment};
use crate::ingest::{self, files};
use crate::{app, demo, migrate};

mod running;
pub(crate) use running::Running;

/// Embedded engine, migrations, local logs (or the demo), then the server.
pub(crate) async fn run(config: Config, no_ingest: bool) -> anyhow::Result<ExitCode> {
    let shutdown = CancellationToken::new();
    app::stop_on_signal(&shutdown)?;
    let data_dir = config.embedded.data_dir_path();
    if let Some(other) = Running::find(&data_dir) {
        anyhow::bail!(
            "another `moraine-mcp up` is already running (pid {}) with its data in {} and its \
             engine on {}. Stop it first (Ctrl-C in its terminal, or `kill {}`), or start this \
             one with its own --data-dir and --engine-port (and --listen).",
            other.pid,
            data_dir.display(),
            other.engine_url,
            other.pid
        );
    }
    let python = config.embedded.python.clone();
    let engine_dir = data_dir.join("engine");
    let environment =
        tokio::task::spawn_blocking(move || Environment::ensure(&engine_dir, &python)).await??;
    let (db_dir, log_path, port) = (
        data_dir.join("db"),
        data_dir.join("engine.log"),
        config.embedded.port,
    );
    if shutdown.is_cancelled() {
        return Ok(ExitCode::SUCCESS);
    }
    let engine =
        tokio::task::spawn_blocking(move || Engine::start(&environment, &db_dir, port, &log_path))
            .await??;
    eprintln!(
        "embedded ClickHouse is running on {} (data in {})",
        engine.url(),
        data_dir.display()
    );
    let url = engine.url();
    let stop = CancellationToken::new();
    let supervisor = tokio::spawn(supervise(engine, stop.clone()));
    if let Err(error) = Running::record(&data_dir, &url, config.server.listen) {
        tracing::warn!(%error, "cannot record this `up` in its data directory; commands run beside it need --clickhouse-url");
    }
    let result = serve(config, &url, &data_dir, no_ingest, shutdown).await;
    Running::clear(&data_dir);
    stop.cancel();
    supervisor.await?;
    result.map(|()| ExitCode::SUCCESS)
}

/// How often the engine process is checked.
const ENGINE_CHECK: Duration = Duration::from_millis(500);

/// Keeps the engine running until `stop`: an engine that exits (a crash, a kill) is reaped and
/// started again on the same port and data, with a growing pause between failed attempts. Stops
/// the engine at the end.
async fn supervise(mut engine: Engine, stop: CancellationToken) {
    let mut pause = Duration::from_secs(1);
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(ENGINE_CHECK) => {}
        }
        let Some(status) = engine.exited() else {
            continue;
        };
        tracing::warn!(%status, "the embedded ClickHouse exited; starting it again");
        let (restarted, back) = tokio::task::spawn_blocking(move || {
            let result = engine.restart();
            (result, engine)
        })
        .await
        .expect("the restart does not panic");
        engine = back;
        match restarted {
            Ok(()) => {
                tracing::info!(url = %engine.url(), "the embedded ClickHouse is running again");
                pause = Duration::from_secs(1);
            }
            Err(error) => {
                tracing::warn!(%error, retry_in_secs = pause.as_secs(), "the embedded ClickHouse did not start again");
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(pause) => {}
                }
                pause = (pause * 2).min(Duration::from_secs(30));
            }
        }
    }
    let _ = tokio::task::spawn_blocking(move || engine.stop()).await;
}

/// Migrates, ingests and serves against the engine at `url` until stopped.
async fn serve(
    config: Config,
    url: &str,
    data_dir: &Path,
    no_ingest: bool,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let mut settings = config.settings();
    settings.clickhouse.url = url.to_owned();
    // Loopback: compressing costs more CPU than it saves.
    settings.clickhouse.compression = Compression::None;
    let config = Arc::new(settings.validate()?);
    let db = app::connect(&config).await?;
    migrate::migrate(&config.clickhouse, &db).await?;
    if let Some(warning) = crate::ingest::index_format::stale_warning(&db, &config).await {
        tracing::warn!("{warning}");
        eprintln!("warning: {warning}");
    }
    if !no_ingest {
        // Stopped part way, ingest leaves nothing half written: the next run completes it.
        tokio::select! {
            ingested = ingest_local(&config, &db, data_dir, true) => ingested?,
            () = shutdown.cancelled() => return Ok(()),
        }
        let interval = config.ingest.interval_secs;
        if interval > 0 {
            tokio::spawn(keep_ingesting(
                config.clone(),
                db.clone(),
                data_dir.to_owned(),
                Duration::from_secs(interval),
                shutdown.clone(),
            ));
        }
    }
    app::run(config, db, shutdown).await
}

/// Picks up new and grown logs every `interval` until `stop`.
async fn keep_ingesting(
    config: Arc<Config>,
    db: Db,
    data_dir: std::path::PathBuf,
    interval: Duration,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        if let Err(e) = ingest_local(&config, &db, &data_dir, false).await {
            tracing::warn!(error = %e, "periodic ingest failed; will retry");
        }
    }
}

/// Ingests the configured sources, or the bundled demo sessions when there are none.
async fn ingest_local(
    config: &Config,
    db: &Db,
    data_dir: &Path,
    announce: bool,
) -> anyhow::Result<()> {
    let (mut logs, problems) = files::from_sources(&config.ingest.sources);
    for problem in &problems {
        tracing::warn!(%problem, "skipping a log source");
    }
    // A team's store holds the team's sessions: never demo ones.
    let team = config.server.is_team_server() || !config.auth.tokens.is_empty();
    if logs.is_empty() && team && announce {
        eprintln!("no agent logs found on this machine; a team server loads no demo sessions");
    }
    if logs.is_empty() && !team && config.embedded.demo_when_empty && !demo::dismissed(data_dir) {
        let demo_dir = data_dir.join("demo");
        let mut found = Vec::new();
        for (harness, root) in demo::write_to(&demo_dir)? {
            found.extend(files::from_paths(&[root], Some(harness), Some(demo::SOURCE)).0);
        }
        if announce {
            eprintln!(
                "no agent logs found under {}; loading {} demo sessions (`moraine-mcp ingest <path>` adds your own, `moraine-mcp forget --demo` removes these)",
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
    db.metrics().observe_local_ingest(&summary.figures());
    // Once: on the terminal at start-up, in the log afterwards (and only when something came).
    if announce {
        eprintln!("{}", summary.headline());
    } else if summary.counters.events > 0 {
        tracing::info!(%summary, "ingested");
    }
    Ok(())
}
