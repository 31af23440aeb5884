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
use crate::vocab::Harness;
use crate::{app, demo, migrate};

/// Embedded engine, migrations, local logs (or the demo), then the server.
pub(crate) async fn run(config: Config, no_ingest: bool) -> anyhow::Result<ExitCode> {
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
    let result = serve(config, &engine, &data_dir, no_ingest).await;
    tokio::task::spawn_blocking(move || engine.stop()).await?;
    result.map(|()| ExitCode::SUCCESS)
}

/// Migrates, ingests and serves against the running `engine` until stopped.
async fn serve(
    config: Config,
    engine: &Engine,
    data_dir: &Path,
    no_ingest: bool,
) -> anyhow::Result<()> {
    let mut settings = config.settings();
    settings.clickhouse.url = engine.url();
    // Loopback: compressing costs more CPU than it saves.
    settings.clickhouse.compression = Compression::None;
    let config = Arc::new(settings.validate()?);
    let db = app::connect(&config).await?;
    migrate::migrate(&config.clickhouse, &db).await?;
    let shutdown = CancellationToken::new();
    if !no_ingest {
        ingest_local(&config, &db, data_dir, true).await?;
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
    if logs.is_empty() && config.embedded.demo_when_empty {
        let demo_dir = data_dir.join("demo");
        let (codex, claude) = demo::write_to(&demo_dir)?;
        let (mut found, _) = files::from_paths(&[codex], Some(Harness::Codex), Some("demo"));
        let (claude_found, _) =
            files::from_paths(&[claude], Some(Harness::ClaudeCode), Some("demo"));
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
