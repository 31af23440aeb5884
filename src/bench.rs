//! `moraine-mcp bench`: generated corpora at several sizes, loaded through the product's ingest
//! path into the embedded engine, then every row of the spec's SLA tables measured through the
//! full HTTP MCP path, next to the BM25 seed design on the same data. Writes a JSON report and a
//! markdown table. Numbers are reported, never asserted.

pub(crate) mod corpus;
mod harness_logs;
pub(crate) mod load;
pub(crate) mod seed;
mod words;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::{Compression, Config};
use crate::db::Db;
use crate::embedded::{Engine, Environment};
use crate::ids;
use crate::ingest::{self, files};
use crate::metrics::Metrics;
use crate::tokenize::query_terms;
use crate::vocab::Harness;
use crate::{app, migrate};
use load::{McpClient, Measured, Percentiles};

#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// Only the 100k profile, with fewer requests (a few minutes).
    #[arg(long)]
    quick: bool,
    /// Corpus sizes in events, comma-separated (default 100000,500000,1000000).
    #[arg(long, value_delimiter = ',')]
    sizes: Option<Vec<u64>>,
    /// Where corpora, the engine and the report go.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
    /// Concurrent clients for the throughput run.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Seed of the corpus and the query sampling.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// The harnesses the corpus is written for, in turn (default: a mix of all of them, Codex
    /// and Claude Code twice as often as the others).
    #[arg(long, value_delimiter = ',')]
    harnesses: Vec<Harness>,
    /// Write and ingest a corpus this many events at a time, each piece deleted once ingested,
    /// so a corpus larger than the disk can hold is measured (default: in one piece up to
    /// 2M events, in pieces of 1M above; the push is then not measured, its logs being gone).
    #[arg(long, value_name = "EVENTS")]
    chunk_events: Option<u64>,
    /// Only generate and ingest each corpus, this many times into fresh databases, and print
    /// the ingest rates (to compare corpora or ingest changes without the service runs).
    #[arg(long, value_name = "TIMES")]
    ingest_only: Option<u32>,
    /// Skip the seed-design baseline.
    #[arg(long)]
    no_baseline: bool,
}

/// One row of the spec's SLA tables (milliseconds), with the tighter goal this project set.
struct Row {
    name: &'static str,
    tool: &'static str,
    /// P50/P95/P99; `None` for global search, whose row depends on the corpus size.
    spec: Option<(f64, f64, f64)>,
    /// The goal's P50/P95/P99 bounds (infinite where the goal sets none).
    goal_ms: Option<(f64, f64, f64)>,
}

const NO_BOUND: f64 = f64::INFINITY;

const ROWS: &[Row] = &[
    Row {
        name: "search_sessions global (default types, n_hits 10)",
        tool: "search_sessions",
        spec: None,
        goal_ms: Some((25.0, 80.0, 150.0)),
    },
    Row {
        name: "search_sessions within session (≤ 250 turns)",
        tool: "search_sessions",
        spec: Some((100.0, 500.0, 1000.0)),
        goal_ms: Some((10.0, NO_BOUND, NO_BOUND)),
    },
    Row {
        name: "search_sessions within turn",
        tool: "search_sessions",
        spec: Some((50.0, 300.0, 750.0)),
        goal_ms: Some((8.0, NO_BOUND, NO_BOUND)),
    },
    Row {
        name: "list_sessions typical window",
        tool: "list_sessions",
        spec: Some((50.0, 300.0, 750.0)),
        goal_ms: Some((15.0, NO_BOUND, NO_BOUND)),
    },
    Row {
        name: "list_sessions broad window",
        tool: "list_sessions",
        spec: Some((200.0, 1000.0, 2000.0)),
        goal_ms: Some((15.0, NO_BOUND, NO_BOUND)),
    },
    Row {
        name: "list_sessions broad, mode-filtered",
        tool: "list_sessions",
        spec: Some((250.0, 1200.0, 2500.0)),
        goal_ms: Some((15.0, NO_BOUND, NO_BOUND)),
    },
    Row {
        name: "open(event ≤ 64 KiB)",
        tool: "open",
        spec: Some((25.0, 200.0, 500.0)),
        goal_ms: Some((5.0, NO_BOUND, NO_BOUND)),
    },
    Row {
        name: "open(turn ≤ 100 events)",
        tool: "open",
        spec: Some((50.0, 300.0, 750.0)),
        goal_ms: Some((10.0, NO_BOUND, NO_BOUND)),
    },
    Row {
        name: "open(session, 100 turns)",
        tool: "open",
        spec: Some((100.0, 500.0, 1000.0)),
        goal_ms: None,
    },
    Row {
        name: "open(session, 1000 turns)",
        tool: "open",
        spec: Some((250.0, 1500.0, 3000.0)),
        goal_ms: Some((100.0, NO_BOUND, NO_BOUND)),
    },
];

/// The spec's global-search row for a corpus size.
fn global_spec(docs: u64) -> (f64, f64, f64) {
    match docs {
        0..=100_000 => (250.0, 750.0, 1500.0),
        100_001..=500_000 => (500.0, 1500.0, 3000.0),
        _ => (800.0, 2500.0, 5000.0),
    }
}

#[derive(Debug, Serialize)]
struct RowReport {
    name: String,
    spec_p50_p95_p99_ms: (f64, f64, f64),
    goal: String,
    measured: Measured,
    seed: Option<Percentiles>,
    /// Seed P50 divided by ours: how many times faster this service is.
    speedup_p50: Option<f64>,
    goal_met: Option<bool>,
    spec_met: bool,
}

#[derive(Debug, Serialize)]
struct SizeReport {
    target_events: u64,
    events: u64,
    searchable_documents: u64,
    sessions: u64,
    /// Sessions written per harness.
    harnesses: String,
    log_bytes: u64,
    ingest_seconds: f64,
    ingest_events_per_second: f64,
    merge_seconds: f64,
    bytes_on_disk: u64,
    bytes_per_event: f64,
    seed_ingest_seconds: Option<f64>,
    seed_events_per_second: Option<f64>,
    rows: Vec<RowReport>,
    /// The web page of twenty turns of the 1000-turn session (one `open` of the session, one of
    /// each turn shown, one of each long prompt or answer).
    web_session_page: Measured,
    concurrent: ConcurrentReport,
    statements: Vec<StatementReport>,
    search_reads: Vec<(String, u64)>,
    /// Per read path: postings the single-client global searches read, and their terms' postings.
    search_postings: Vec<(String, u64, u64)>,
    push: Option<PushReport>,
}

/// The corpus pushed over loopback HTTP to the ingest API of a second service on the same
/// engine: alone, and again while one client searches the first.
#[derive(Debug, Serialize)]
struct PushReport {
    events: u64,
    seconds: f64,
    events_per_second: f64,
    /// Bytes sent (zstd) per byte of log.
    compression_ratio: f64,
    /// Push rate ÷ local ingest rate (goal ≥ 0.8).
    of_local: f64,
    /// The push rate while one client searches (the second push).
    events_per_second_while_searching: f64,
    /// Global searches while the push ran, and their P50 ÷ the idle P50 (goal ≤ 1.5).
    searches_during: Percentiles,
    p50_of_idle: f64,
}

/// One ClickHouse statement of the tools: how often it ran and its mean latency, single client.
#[derive(Debug, Serialize)]
struct StatementReport {
    name: String,
    count: u64,
    mean_ms: f64,
}

#[derive(Debug, Serialize)]
struct ConcurrentReport {
    clients: usize,
    searches: usize,
    searches_per_second: f64,
    latency: Percentiles,
    goal: &'static str,
    goal_met: bool,
}

pub(crate) async fn run(args: BenchArgs, base: Config) -> anyhow::Result<ExitCode> {
    // The benchmark runs its own embedded engine: one node.
    anyhow::ensure!(
        base.clickhouse.cluster.is_empty(),
        "bench measures one node on the embedded engine: unset clickhouse.cluster"
    );
    let sizes = match (&args.sizes, args.quick) {
        (Some(sizes), _) => sizes.clone(),
        (None, true) => vec![100_000],
        (None, false) => vec![100_000, 500_000, 1_000_000],
    };
    let requests = if args.quick { 100 } else { 300 };
    std::fs::create_dir_all(&args.out)?;
    let out = args.out.canonicalize()?;
    eprintln!(
        "bench: sizes {sizes:?}, {requests} requests per row, report in {}",
        out.display()
    );

    let engine_dir = out.join("engine-db");
    if engine_dir.exists() {
        std::fs::remove_dir_all(&engine_dir)?;
    }
    let engine = start_engine(&base, &out, &engine_dir).await?;

    if let Some(times) = args.ingest_only {
        for &size in &sizes {
            ingest_rates(&args, &base, &engine.url(), &out, size, times).await?;
        }
        drop(engine);
        return Ok(ExitCode::SUCCESS);
    }
    let mut reports = Vec::new();
    for &size in &sizes {
        let report = run_size(&args, &base, &engine.url(), &out, size, requests).await?;
        reports.push(report);
    }
    let markdown = markdown(&reports, !args.quick);
    let json = json!({
        "machine": {"cpus": std::thread::available_parallelism().map_or(0, |n| n.get()), "version": env!("CARGO_PKG_VERSION")},
        "sizes": reports,
        "growth": growth(&reports),
    });
    std::fs::write(
        out.join("report.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    std::fs::write(out.join("report.md"), &markdown)?;
    println!("{markdown}");
    drop(engine);
    Ok(ExitCode::SUCCESS)
}

/// The embedded engine on a free loopback port, its Python environment under `out/engine-env`
/// (created on first use), its data in `data`, its log in `out/engine.log`.
pub(crate) async fn start_engine(
    base: &Config,
    out: &std::path::Path,
    data: &std::path::Path,
) -> anyhow::Result<Engine> {
    let env_dir = out.join("engine-env");
    let python = base.embedded.python.clone();
    let environment =
        tokio::task::spawn_blocking(move || Environment::ensure(&env_dir, &python)).await??;
    let (data, log) = (data.to_owned(), out.join("engine.log"));
    Ok(tokio::task::spawn_blocking(move || Engine::start(&environment, &data, 0, &log)).await??)
}

async fn run_size(
    args: &BenchArgs,
    base: &Config,
    url: &str,
    out: &std::path::Path,
    size: u64,
    requests: usize,
) -> anyhow::Result<SizeReport> {
    let label = label(size);
    let loaded = load(args, base, url, out, size).await?;
    let mut rng = Pcg64Mcg::seed_from_u64(args.seed ^ size);
    let workload = Workload::sample(&loaded.db, &loaded.generated, &mut rng, requests).await?;
    let service = measure_service(args, &label, &loaded, &workload).await?;
    // A corpus ingested in chunks is gone: there is nothing left to push.
    let push = if loaded.generated.dir.exists() {
        Some(measure_push(&label, &loaded, &workload, &service).await?)
    } else {
        None
    };
    let (seed_seconds, seeds) = if args.no_baseline {
        (None, vec![None; ROWS.len()])
    } else {
        let (seconds, seeds) = measure_seed_design(&label, &loaded, &workload, requests).await?;
        (Some(seconds), seeds)
    };
    let Loaded {
        config,
        generated,
        summary,
        merge_seconds,
        documents,
        sessions,
        bytes_on_disk,
        ..
    } = loaded;
    let report = SizeReport {
        target_events: size,
        events: summary.counters.events,
        searchable_documents: documents,
        sessions,
        harnesses: generated.mix(),
        log_bytes: generated.bytes,
        ingest_seconds: summary.elapsed.as_secs_f64(),
        ingest_events_per_second: summary.events_per_second(),
        merge_seconds,
        bytes_on_disk,
        bytes_per_event: bytes_on_disk as f64 / summary.counters.events.max(1) as f64,
        seed_ingest_seconds: seed_seconds,
        seed_events_per_second: seed_seconds.map(|s| documents as f64 / s.max(1e-9)),
        concurrent: service.concurrent,
        web_session_page: service.web_session_page,
        rows: row_reports(service.measured, seeds, documents),
        statements: service.statements,
        search_reads: service.search_reads,
        search_postings: service.search_postings,
        push,
    };
    crate::db::drop_database(&config.clickhouse).await?;
    Ok(report)
}

/// A generated corpus, ingested through the product's path and merged to its steady state.
struct Loaded {
    config: Arc<Config>,
    db: Db,
    generated: corpus::Generated,
    summary: ingest::Summary,
    merge_seconds: f64,
    documents: u64,
    sessions: u64,
    bytes_on_disk: u64,
}

async fn load(
    args: &BenchArgs,
    base: &Config,
    url: &str,
    out: &std::path::Path,
    size: u64,
) -> anyhow::Result<Loaded> {
    let label = label(size);
    let (config, db) = open_database(base, url, &format!("bench_{label}"), args.clients).await?;
    let chunk = args
        .chunk_events
        .or((size > 2_000_000).then_some(1_000_000))
        .filter(|chunk| *chunk < size);
    let (generated, summary) = match chunk {
        None => {
            let generated = generate(args, out, size).await?;
            let summary = ingest_generated(&config, &db, &label, &generated).await?;
            (generated, summary)
        }
        Some(chunk) => ingest_in_chunks(args, &config, &db, out, size, chunk).await?,
    };

    // Steady state: what background merges converge to.
    let merge_started = Instant::now();
    optimize(&db, STEADY_TABLES).await?;
    let merge_seconds = merge_started.elapsed().as_secs_f64();
    let (documents, sessions, bytes_on_disk): (u64, u64, u64) = db
        .read(
            "bench_facts",
            "SELECT toUInt64(assumeNotNull((SELECT sum(docs) FROM corpus_stats))), \
                    toUInt64(assumeNotNull((SELECT count() FROM sessions FINAL))), \
                    toUInt64(assumeNotNull((SELECT sum(bytes_on_disk) FROM system.parts WHERE database = currentDatabase() AND active)))",
        )
        .fetch_optional(&db, db.default_deadline())
        .await?
        .context("no facts")?;
    Ok(Loaded {
        config,
        db,
        generated,
        summary,
        merge_seconds,
        documents,
        sessions,
        bytes_on_disk,
    })
}

/// Generates the corpus of `size` events (replacing an older one).
async fn generate(
    args: &BenchArgs,
    out: &std::path::Path,
    size: u64,
) -> anyhow::Result<corpus::Generated> {
    let label = label(size);
    eprintln!("bench {label}: generating the corpus");
    let spec = corpus::Spec {
        events: size,
        seed: args.seed,
        harnesses: args.harnesses.clone(),
    };
    let corpus_dir = out.join(format!("corpus-{label}"));
    Ok(tokio::task::spawn_blocking(move || corpus::generate(&spec, &corpus_dir)).await??)
}

/// `--ingest-only`: the corpus ingested `times` times, each into a fresh database.
async fn ingest_rates(
    args: &BenchArgs,
    base: &Config,
    url: &str,
    out: &std::path::Path,
    size: u64,
    times: u32,
) -> anyhow::Result<()> {
    let label = label(size);
    let generated = generate(args, out, size).await?;
    let mut rates = Vec::new();
    for _ in 0..times.max(1) {
        let (config, db) =
            open_database(base, url, &format!("bench_{label}"), args.clients).await?;
        let summary = ingest_generated(&config, &db, &label, &generated).await?;
        rates.push(summary.events_per_second());
        crate::db::drop_database(&config.clickhouse).await?;
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "bench {label}: ingest {} events/s (median of {}; all: {})",
        rates[rates.len() / 2].round(),
        rates.len(),
        rates
            .iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// A fresh, migrated database named `database` on the engine at `url`, for a service that
/// takes `clients` concurrent callers.
pub(crate) async fn open_database(
    base: &Config,
    url: &str,
    database: &str,
    clients: usize,
) -> anyhow::Result<(Arc<Config>, Db)> {
    let mut settings = base.settings();
    settings.clickhouse.url = url.to_owned();
    settings.clickhouse.database = database.to_owned();
    settings.clickhouse.query_timeout_ms = 600_000;
    settings.clickhouse.compression = Compression::None;
    // The concurrent run measures throughput with every client's calls queued, not refused.
    settings.clickhouse.max_waiting_calls = clients;
    settings.server.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    settings.server.shutdown_grace_secs = 5;
    let config = Arc::new(settings.validate()?);
    let db = Db::new(&config.clickhouse, Metrics::new(&config.sla));
    db.wait_until_ready(Duration::from_secs(60)).await?;
    crate::db::drop_database(&config.clickhouse).await?;
    migrate::migrate(&config.clickhouse, &db).await?;
    Ok((config, db))
}

/// Ingests the logs of a generated corpus (or of one chunk of it).
async fn ingest_generated(
    config: &Config,
    db: &Db,
    label: &str,
    generated: &corpus::Generated,
) -> anyhow::Result<ingest::Summary> {
    eprintln!(
        "bench {label}: ingesting {} events from {} files ({} sessions: {})",
        generated.events,
        generated.files,
        generated.sessions.iter().map(|(_, n)| n).sum::<u64>(),
        generated.mix()
    );
    let summary = ingest_logs(config, db, &generated.dir, "bench").await?;
    eprintln!("bench {label}: ingested {summary}");
    Ok(summary)
}

/// Ingests every log under `dir` through the product's path, recorded as source `source`; a
/// file the scan cannot use is an error.
pub(crate) async fn ingest_logs(
    config: &Config,
    db: &Db,
    dir: &std::path::Path,
    source: &str,
) -> anyhow::Result<ingest::Summary> {
    let (logs, problems) = files::from_paths(&[dir.to_owned()], None, Some(source));
    anyhow::ensure!(problems.is_empty(), "corpus problems: {problems:?}");
    Ok(ingest::run(config, db, logs, false).await?)
}

/// Writes and ingests the corpus `chunk` events at a time, deleting each chunk's logs once
/// ingested: what was generated (the logs' bytes summed; the directory gone) and the runs'
/// summed summary (its time is ingest time only).
async fn ingest_in_chunks(
    args: &BenchArgs,
    config: &Config,
    db: &Db,
    out: &std::path::Path,
    size: u64,
    chunk: u64,
) -> anyhow::Result<(corpus::Generated, ingest::Summary)> {
    let label = label(size);
    let spec = corpus::Spec {
        events: size,
        seed: args.seed,
        harnesses: args.harnesses.clone(),
    };
    let mut generator = corpus::Generator::new(spec);
    let dir = out.join(format!("corpus-{label}-chunk"));
    let mut total: Option<(corpus::Generated, ingest::Summary)> = None;
    while !generator.done() {
        let (piece, back) = tokio::task::spawn_blocking({
            let dir = dir.clone();
            move || {
                let piece = generator.chunk(&dir, chunk);
                (piece, generator)
            }
        })
        .await?;
        generator = back;
        let piece = piece?;
        let summary = ingest_generated(config, db, &label, &piece).await?;
        std::fs::remove_dir_all(&dir)?;
        total = Some(match total {
            None => (piece, summary),
            Some((mut all, mut summed)) => {
                all.absorb(piece);
                summed.absorb(summary);
                (all, summed)
            }
        });
    }
    let (generated, summary) = total.context("an empty corpus")?;
    eprintln!("bench {label}: ingested in chunks of {chunk} events: {summary}");
    Ok((generated, summary))
}

/// What the service measured: every SLA row with one client, the statements behind them, and
/// the concurrent run.
struct ServiceMeasures {
    measured: Vec<Measured>,
    statements: Vec<StatementReport>,
    /// Single-client searches by the postings they read (`search_reads_total`).
    search_reads: Vec<(String, u64)>,
    /// And how many (`search_postings_total`).
    search_postings: Vec<(String, u64, u64)>,
    concurrent: ConcurrentReport,
    /// The web page of twenty turns of the 1000-turn session.
    web_session_page: Measured,
}

/// Runs the service in this process and drives it over real HTTP.
async fn measure_service(
    args: &BenchArgs,
    label: &str,
    loaded: &Loaded,
    workload: &Workload,
) -> anyhow::Result<ServiceMeasures> {
    let listener = tokio::net::TcpListener::bind(loaded.config.server.listen).await?;
    let shutdown = CancellationToken::new();
    let service = app::spawn(
        loaded.config.clone(),
        loaded.db.clone(),
        listener,
        shutdown.clone(),
    )
    .await?;
    let client = McpClient::new(service.mcp_url());
    let mut measured = Vec::new();
    for (row, requests) in ROWS.iter().zip(workload.rows()) {
        eprintln!("bench {label}: {}", row.name);
        let result = client
            .run(row.tool, Arc::new(requests.clone()), 1, 20)
            .await;
        measured.push(result);
    }
    // Where the single-client time went, statement by statement (the tools' queries only).
    let statements: Vec<StatementReport> = loaded
        .db
        .metrics()
        .query_means()
        .into_iter()
        .filter(|(name, _, _)| {
            ["bench", "ingest", "migrate", "store"]
                .iter()
                .all(|p| !name.starts_with(p))
        })
        .map(|(name, count, mean)| StatementReport {
            name,
            count,
            mean_ms: mean * 1000.0,
        })
        .collect();
    let search_reads = loaded
        .db
        .metrics()
        .search_reads(&crate::tools::search::READ_PATHS);
    let search_postings = loaded
        .db
        .metrics()
        .search_postings(&crate::tools::search::READ_PATHS);
    eprintln!("bench {label}: web page of the 1000-turn session");
    let web_session_page = load::fetch_pages(
        &format!("http://{}", service.addr()),
        &workload.web_session_1000,
        3,
    )
    .await;
    eprintln!("bench {label}: {} concurrent clients", args.clients);
    let mixed: Vec<Value> = workload
        .global
        .iter()
        .cycle()
        .take(args.clients * 40)
        .cloned()
        .collect();
    let concurrent = client
        .run("search_sessions", Arc::new(mixed), args.clients, 0)
        .await;
    shutdown.cancel();
    let _ = service.wait().await;
    Ok(ServiceMeasures {
        web_session_page,
        measured,
        statements,
        search_reads,
        search_postings,
        concurrent: ConcurrentReport {
            clients: args.clients,
            searches: concurrent.client.samples,
            searches_per_second: concurrent.throughput,
            goal: "≥ 150 searches/s with P99 ≤ 500 ms",
            goal_met: concurrent.throughput >= 150.0 && concurrent.client.p99 <= 500.0,
            latency: concurrent.client,
        },
    })
}

/// Pushes the corpus over loopback HTTP with the product's push client to a second service (on
/// a database of its own, on the same engine), twice: alone, for the push rate next to local
/// ingest; then again into a fresh database while one client keeps searching the first
/// service, for search latency during a full-speed push.
async fn measure_push(
    label: &str,
    loaded: &Loaded,
    workload: &Workload,
    service: &ServiceMeasures,
) -> anyhow::Result<PushReport> {
    eprintln!("bench {label}: pushing the corpus over HTTP");
    let (alone, seconds) = push_corpus(label, loaded).await?;
    eprintln!("bench {label}: pushing the corpus over HTTP while searching");
    let shutdown = CancellationToken::new();
    let searched = app::spawn(
        loaded.config.clone(),
        loaded.db.clone(),
        tokio::net::TcpListener::bind(loaded.config.server.listen).await?,
        shutdown.clone(),
    )
    .await?;
    let searcher = McpClient::new(searched.mcp_url());
    let done = CancellationToken::new();
    let stop_searching = done.clone();
    let queries = Arc::new(workload.global.clone());
    let searching = tokio::spawn(async move {
        searcher
            .run_until("search_sessions", queries, stop_searching)
            .await
    });
    let pushed = push_corpus(label, loaded).await;
    done.cancel();
    let during = searching.await?;
    shutdown.cancel();
    let _ = searched.wait().await;
    let (searching_push, searching_seconds) = pushed?;
    let events_per_second = alone.events as f64 / seconds.max(1e-9);
    let idle = service.measured[0].client.p50;
    Ok(PushReport {
        events: alone.events,
        seconds,
        events_per_second,
        compression_ratio: alone.compressed as f64 / alone.bytes.max(1) as f64,
        of_local: events_per_second / loaded.summary.events_per_second().max(1e-9),
        events_per_second_while_searching: searching_push.events as f64
            / searching_seconds.max(1e-9),
        p50_of_idle: during.p50 / idle.max(1e-9),
        searches_during: during,
    })
}

/// Pushes the whole corpus into a fresh database behind a service of its own, and drops the
/// database again: what was pushed, in how many seconds.
async fn push_corpus(
    label: &str,
    loaded: &Loaded,
) -> anyhow::Result<(crate::push::PushSummary, f64)> {
    let mut settings = loaded.config.settings();
    settings.clickhouse.database = format!("bench_{label}_push");
    let config = Arc::new(settings.validate()?);
    crate::db::drop_database(&config.clickhouse).await?;
    // One server takes both the pushes and the searches: its ingest gives way to the
    // searched service's tool calls.
    let db =
        Db::new(&config.clickhouse, Metrics::new(&config.sla)).sharing_foreground_of(&loaded.db);
    migrate::migrate(&config.clickhouse, &db).await?;
    let shutdown = CancellationToken::new();
    let target = app::spawn(
        config.clone(),
        db.clone(),
        tokio::net::TcpListener::bind(config.server.listen).await?,
        shutdown.clone(),
    )
    .await?;
    let (logs, problems) = files::from_paths(
        std::slice::from_ref(&loaded.generated.dir),
        None,
        Some("bench"),
    );
    anyhow::ensure!(problems.is_empty(), "corpus problems: {problems:?}");
    let client = crate::push::Client::new(
        &format!("http://{}", target.addr()),
        None,
        Some("bench"),
        Duration::from_secs(60),
    )?;
    let started = Instant::now();
    let pushed = crate::push::push_logs(&client, &logs, crate::push::CHUNK_BYTES, false).await;
    let seconds = started.elapsed().as_secs_f64();
    shutdown.cancel();
    let _ = target.wait().await;
    crate::db::drop_database(&config.clickhouse).await?;
    let pushed = pushed?;
    anyhow::ensure!(pushed.failed == 0, "{} logs failed to push", pushed.failed);
    Ok((pushed, seconds))
}

/// Loads the seed design from the service's tables and measures the same workload on it.
async fn measure_seed_design(
    label: &str,
    loaded: &Loaded,
    workload: &Workload,
    requests: usize,
) -> anyhow::Result<(f64, Vec<Option<Percentiles>>)> {
    eprintln!("bench {label}: loading the seed design");
    let mut seed_config = loaded.config.settings();
    seed_config.clickhouse.database = format!("bench_{label}_seed");
    let seed_db = Db::new(&seed_config.clickhouse, Metrics::new(&seed_config.sla));
    crate::db::drop_database(&seed_config.clickhouse).await?;
    crate::db::base_client(&seed_config.clickhouse)
        .query("CREATE DATABASE {db:Identifier}")
        .param("db", &seed_config.clickhouse.database)
        .execute()
        .await?;
    let seconds = seed::load(&seed_db, &loaded.config.clickhouse.database).await?;
    optimize(&seed_db, &["search_documents", "search_postings"]).await?;
    eprintln!("bench {label}: measuring the seed design");
    let seeds = measure_seed(&seed_db, workload, requests.min(100)).await;
    crate::db::drop_database(&seed_config.clickhouse).await?;
    Ok((seconds, seeds))
}

/// Every SLA row: measured against the spec and the goal, next to the seed design.
fn row_reports(
    measured: Vec<Measured>,
    seeds: Vec<Option<Percentiles>>,
    documents: u64,
) -> Vec<RowReport> {
    ROWS.iter()
        .zip(measured)
        .zip(seeds)
        .map(|((row, measured), seed)| {
            let spec = row.spec.unwrap_or_else(|| global_spec(documents));
            let speedup_p50 = seed.as_ref().map(|s| s.p50 / measured.client.p50.max(1e-9));
            let c = &measured.client;
            let goal_met = row
                .goal_ms
                .map(|goal| c.p50 <= goal.0 && c.p95 <= goal.1 && c.p99 <= goal.2);
            RowReport {
                name: row.name.to_owned(),
                spec_p50_p95_p99_ms: spec,
                goal: goal_text(row.goal_ms),
                spec_met: c.p50 <= spec.0 && c.p95 <= spec.1 && c.p99 <= spec.2,
                goal_met,
                speedup_p50,
                seed,
                measured,
            }
        })
        .collect()
}

/// The goal as the report shows it, e.g. "P50 ≤ 25, P95 ≤ 80, P99 ≤ 150" ("—" without one).
fn goal_text(goal: Option<(f64, f64, f64)>) -> String {
    let Some((p50, p95, p99)) = goal else {
        return "—".into();
    };
    [("P50", p50), ("P95", p95), ("P99", p99)]
        .iter()
        .filter(|(_, ms)| ms.is_finite())
        .map(|(name, ms)| format!("{name} ≤ {ms}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The tables a loaded corpus is merged to one part each of before it is measured.
pub(crate) const STEADY_TABLES: &[&str] = &[
    "events",
    "postings",
    "term_df",
    "corpus_stats",
    "turns",
    "sessions",
    "session_vectors",
];

/// Merges each table to one part: the steady state background merges converge to.
pub(crate) async fn optimize(db: &Db, tables: &[&str]) -> Result<(), crate::db::DbError> {
    for table in tables {
        db.write("bench_optimize", "OPTIMIZE TABLE {t:Identifier} FINAL")
            .param("t", *table)
            .execute(db, db.default_deadline())
            .await?;
    }
    Ok(())
}

fn label(size: u64) -> String {
    if size.is_multiple_of(1_000_000) {
        format!("{}m", size / 1_000_000)
    } else if size.is_multiple_of(1000) {
        format!("{}k", size / 1000)
    } else {
        size.to_string()
    }
}

/// The requests of every row, sampled from the loaded data.
struct Workload {
    global: Vec<Value>,
    session_search: Vec<Value>,
    turn_search: Vec<Value>,
    list_typical: Vec<Value>,
    list_broad: Vec<Value>,
    list_mode: Vec<Value>,
    open_event: Vec<Value>,
    open_turn: Vec<Value>,
    open_session_100: Vec<Value>,
    open_session_1000: Vec<Value>,
    /// Web pages of the 1000-turn session (paths under the server's base URL), twenty turns
    /// each, from its first page to its last.
    web_session_1000: Vec<String>,
    /// Inputs of the seed-design equivalents, parallel to the rows above.
    seed: SeedInputs,
}

#[derive(Default)]
struct SeedInputs {
    global: Vec<String>,
    session_search: Vec<(String, u64)>,
    turn_search: Vec<(String, u64, i64, i64)>,
    list_typical: Vec<(i64, i64)>,
    list_broad: (i64, i64),
    open_event: Vec<(u64, u64)>,
    open_turn: Vec<(u64, u32)>,
    session_100: u64,
    session_1000: u64,
}

#[derive(Debug, clickhouse::Row, serde::Deserialize)]
struct SampleText {
    session_key: u64,
    text: String,
}

#[derive(Debug, clickhouse::Row, serde::Deserialize)]
struct SampleTurn {
    session_key: u64,
    ordinal: u32,
    started_at: i64,
    updated_at: i64,
    text: String,
}

/// Picks `count` terms from a text (1–6 by default), as a user would remember them.
fn terms_from(text: &str, rng: &mut Pcg64Mcg, min: usize, max: usize) -> String {
    let terms = query_terms(&text[..crate::text::floor_char_boundary(text, 4000)]);
    if terms.is_empty() {
        return "error".into();
    }
    let count = rng.random_range(min..=max).min(terms.len());
    (0..count)
        .map(|_| terms[rng.random_range(0..terms.len())].clone())
        .collect::<Vec<_>>()
        .join(" ")
}

impl Workload {
    /// Each SLA row's requests, in [`ROWS`] order.
    fn rows(&self) -> [&Vec<Value>; 10] {
        [
            &self.global,
            &self.session_search,
            &self.turn_search,
            &self.list_typical,
            &self.list_broad,
            &self.list_mode,
            &self.open_event,
            &self.open_turn,
            &self.open_session_100,
            &self.open_session_1000,
        ]
    }

    async fn sample(
        db: &Db,
        corpus: &corpus::Generated,
        rng: &mut Pcg64Mcg,
        requests: usize,
    ) -> anyhow::Result<Self> {
        let salt: u64 = rng.random();
        let drawn = Drawn::fetch(db, salt, requests).await?;
        let Drawn {
            texts,
            sessions,
            turns,
            events,
            span,
        } = drawn;
        let global_queries = query_mix(&texts, rng, requests);
        let landmark = |(harness, native): &(Harness, String)| files::session_key(*harness, native);
        let (s100, s1000) = (
            landmark(&corpus.hundred_turns),
            landmark(&corpus.thousand_turns),
        );
        let week = 7 * 24 * 3600 * 1000;
        let windows: Vec<(i64, i64)> = (0..requests)
            .map(|_| {
                let start = rng.random_range(span.0..(span.1 - week).max(span.0 + 1));
                (start, start + week)
            })
            .collect();
        let iso = crate::text::format_ts;
        let mut seed = SeedInputs {
            global: global_queries.clone(),
            list_typical: windows.clone(),
            list_broad: (span.0, span.1 + 1),
            open_event: events.clone(),
            session_100: s100,
            session_1000: s1000,
            ..Default::default()
        };
        let session_search: Vec<Value> = sessions
            .iter()
            .map(|s| {
                let query = terms_from(&s.text, rng, 1, 3);
                seed.session_search.push((query.clone(), s.session_key));
                json!({"query": query, "within_id": ids::session_id(s.session_key)})
            })
            .collect();
        let turn_search: Vec<Value> = turns
            .iter()
            .map(|t| {
                let query = terms_from(&t.text, rng, 1, 3);
                seed.turn_search
                    .push((query.clone(), t.session_key, t.started_at, t.updated_at));
                json!({"query": query, "within_id": ids::turn_id(t.session_key, t.ordinal.into())})
            })
            .collect();
        seed.open_turn = turns.iter().map(|t| (t.session_key, t.ordinal)).collect();
        let repeat = |value: Value| vec![value; requests.min(50)];
        Ok(Self {
            global: global_queries.iter().map(|q| json!({"query": q})).collect(),
            session_search,
            turn_search,
            list_typical: windows
                .iter()
                .map(
                    |&(start, end)| json!({"start_datetime": iso(start), "end_datetime": iso(end)}),
                )
                .collect(),
            list_broad: repeat(
                json!({"start_datetime": iso(span.0), "end_datetime": iso(span.1 + 1), "limit": 50}),
            ),
            list_mode: repeat(
                json!({"start_datetime": iso(span.0), "end_datetime": iso(span.1 + 1), "limit": 50, "mode": "tool_calling"}),
            ),
            open_event: events
                .iter()
                .map(|&(s, e)| json!({"id": ids::event_id(s, e)}))
                .collect(),
            open_turn: turns
                .iter()
                .map(|t| json!({"id": ids::turn_id(t.session_key, t.ordinal.into())}))
                .collect(),
            open_session_100: repeat(json!({"id": ids::session_id(s100)})),
            open_session_1000: repeat(json!({"id": ids::session_id(s1000)})),
            web_session_1000: (0..requests.max(20))
                .map(|i| {
                    let turn = 1 + (i * 97) % 1000;
                    format!("/ui/session/{}?turn={turn}", ids::session_id(s1000))
                })
                .collect(),
            seed,
        })
    }
}

/// What a workload is drawn from: random documents, sessions, turns and events of the corpus.
struct Drawn {
    texts: Vec<SampleText>,
    sessions: Vec<SampleText>,
    turns: Vec<SampleTurn>,
    events: Vec<(u64, u64)>,
    /// The corpus's first start and last update.
    span: (i64, i64),
}

impl Drawn {
    async fn fetch(db: &Db, salt: u64, requests: usize) -> anyhow::Result<Self> {
        let deadline = || Instant::now() + Duration::from_secs(600);
        let texts: Vec<SampleText> = db
            .read(
                "bench_sample",
                "SELECT session_key, substring(text, 1, 4000) AS text FROM events \
                 WHERE searchable AND toUInt8(event_type) IN (1, 2, 5) ORDER BY cityHash64(event_key, {salt:UInt64}) LIMIT {n:UInt32}",
            )
            .param("salt", salt)
            .param("n", requests as u32 * 2)
            .fetch_all(db, deadline())
            .await?;
        let sessions: Vec<SampleText> = db
            .read(
                "bench_sample",
                "SELECT session_key, substring(any(text), 1, 4000) AS text FROM events \
                 WHERE searchable AND toUInt8(event_type) IN (1, 2, 5) \
                   AND session_key IN (SELECT session_key FROM sessions FINAL WHERE turn_count <= 250 \
                                       ORDER BY cityHash64(session_key, {salt:UInt64}) LIMIT {n:UInt32}) \
                 GROUP BY session_key",
            )
            .param("salt", salt)
            .param("n", requests as u32)
            .fetch_all(db, deadline())
            .await?;
        let turns: Vec<SampleTurn> = db
            .read(
                "bench_sample",
                "SELECT t.session_key AS session_key, t.ordinal AS ordinal, t.started_at AS started_at, \
                        t.updated_at AS updated_at, substring(t.user_preview, 1, 4000) AS text \
                 FROM turns AS t FINAL WHERE t.event_count <= 100 AND t.user_preview != '' \
                 ORDER BY cityHash64(t.session_key, t.ordinal, {salt:UInt64}) LIMIT {n:UInt32}",
            )
            .param("salt", salt)
            .param("n", requests as u32)
            .fetch_all(db, deadline())
            .await?;
        let events: Vec<(u64, u64)> = db
            .read(
                "bench_sample",
                "SELECT session_key, event_key FROM events WHERE length(text) + length(raw) <= 65536 \
                 ORDER BY cityHash64(event_key, {salt:UInt64}) LIMIT {n:UInt32}",
            )
            .param("salt", salt)
            .param("n", requests as u32)
            .fetch_all(db, deadline())
            .await?;
        let span: (i64, i64) = db
            .read(
                "bench_sample",
                "SELECT min(started_at), max(updated_at) FROM sessions FINAL",
            )
            .fetch_optional(db, deadline())
            .await?
            .context("no sessions")?;
        Ok(Self {
            texts,
            sessions,
            turns,
            events,
            span,
        })
    }
}

/// The global query mix: user-like queries from real documents (1–6 terms), common-term
/// queries, worst cases of several very common terms, and rare near-unique terms.
fn query_mix(texts: &[SampleText], rng: &mut Pcg64Mcg, requests: usize) -> Vec<String> {
    let common = &words::common_words()[..60];
    let mut queries = Vec::new();
    for (i, sample) in texts.iter().take(requests).enumerate() {
        let query = match i % 10 {
            0..=5 => terms_from(&sample.text, rng, 1, 6),
            6 | 7 => (0..rng.random_range(1..=3))
                .map(|_| common[rng.random_range(0..common.len())])
                .collect::<Vec<_>>()
                .join(" "),
            8 => (0..rng.random_range(4..=6))
                .map(|_| common[rng.random_range(0..12)])
                .collect::<Vec<_>>()
                .join(" "),
            _ => {
                let terms = query_terms(&sample.text);
                terms
                    .iter()
                    .max_by_key(|t| t.len())
                    .cloned()
                    .unwrap_or_else(|| "error".into())
            }
        };
        queries.push(query);
    }
    queries
}

/// The seed design's latency for each row, on the same inputs.
async fn measure_seed(db: &Db, workload: &Workload, calls: usize) -> Vec<Option<Percentiles>> {
    let s = &workload.seed;
    let broad = s.list_broad;
    vec![
        Some(
            seed::measure(calls.min(s.global.len()), |i| {
                seed::search(db, &s.global[i], seed::SeedScope::All)
            })
            .await,
        ),
        Some(
            seed::measure(calls.min(s.session_search.len()), |i| {
                seed::search(
                    db,
                    &s.session_search[i].0,
                    seed::SeedScope::Session(s.session_search[i].1),
                )
            })
            .await,
        ),
        Some(
            seed::measure(calls.min(s.turn_search.len()), |i| {
                let (query, session, from, to) = &s.turn_search[i];
                seed::search(db, query, seed::SeedScope::TurnRange(*session, *from, *to))
            })
            .await,
        ),
        Some(
            seed::measure(calls.min(s.list_typical.len()), |i| {
                seed::list(db, s.list_typical[i].0, s.list_typical[i].1)
            })
            .await,
        ),
        Some(seed::measure(calls.min(30), |_| seed::list(db, broad.0, broad.1)).await),
        None,
        Some(
            seed::measure(calls.min(s.open_event.len()), |i| {
                seed::open_event(db, s.open_event[i].0, s.open_event[i].1)
            })
            .await,
        ),
        Some(
            seed::measure(calls.min(s.open_turn.len()), |i| {
                seed::open_turn(db, s.open_turn[i].0, s.open_turn[i].1)
            })
            .await,
        ),
        Some(seed::measure(calls.min(30), |_| seed::open_session(db, s.session_100)).await),
        Some(seed::measure(calls.min(30), |_| seed::open_session(db, s.session_1000)).await),
    ]
}

fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// The report as Markdown; goals are judged (`met` / `missed`) only when `judged`: a `--quick`
/// smoke run is too small to say anything about them.
fn markdown(reports: &[SizeReport], judged: bool) -> String {
    let verdict = |met: bool| match (judged, met) {
        (false, _) => "not judged",
        (true, true) => "met",
        (true, false) => "missed",
    };
    let mut out = String::new();
    if !judged {
        out.push_str(
            "\nSmoke run (--quick): too few requests on too small a corpus to judge goals; \
             the figures show that every path works.\n",
        );
    }
    for r in reports {
        out.push_str(&format!(
            "\n### {} searchable documents ({} events, {} sessions)\n\nSessions per harness: {}.\n\n",
            r.searchable_documents, r.events, r.sessions, r.harnesses
        ));
        out.push_str("| operation | spec P50/P95/P99 | goal | P50 | P95 | P99 | server P50 | seed P50 | seed ÷ ours | goal | spec |\n");
        out.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
        for row in &r.rows {
            let c = &row.measured.client;
            let (sp50, sp95, sp99) = row.spec_p50_p95_p99_ms;
            out.push_str(&format!(
                "| {} | {}/{}/{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                row.name,
                ms(sp50),
                ms(sp95),
                ms(sp99),
                row.goal,
                ms(c.p50),
                ms(c.p95),
                ms(c.p99),
                ms(row.measured.server.p50),
                row.seed.as_ref().map_or("—".into(), |s| ms(s.p50)),
                row.speedup_p50.map_or("—".into(), |x| format!("{x:.1}×")),
                row.goal_met.map_or("—", verdict),
                verdict(row.spec_met),
            ));
        }
        let w = &r.web_session_page.client;
        out.push_str(&format!(
            "| web page: 20 turns of the 1000-turn session | — | — | {} | {} | {} | — | — | — | — | — |\n",
            ms(w.p50),
            ms(w.p95),
            ms(w.p99),
        ));
        let c = &r.concurrent;
        out.push_str(&format!(
            "| {} concurrent clients, mixed search | — | {} | {} | {} | {} | — | — | — | {} | — |\n",
            c.clients,
            c.goal,
            ms(c.latency.p50),
            ms(c.latency.p95),
            ms(c.latency.p99),
            verdict(c.goal_met),
        ));
        out.push_str(&format!(
            "\nThroughput {:.0} searches/s. Ingest {:.0} events/s ({:.1} s; goal ≥ 50k/s: {}), seed design {}. \
             Merge to one part: {:.1} s. On disk {:.0} bytes/event ({:.1} MiB); logs {:.1} MiB.\n",
            c.searches_per_second,
            r.ingest_events_per_second,
            r.ingest_seconds,
            verdict(r.ingest_events_per_second >= 50_000.0),
            r.seed_events_per_second.map_or("not measured".into(), |x| format!("{x:.0} documents/s")),
            r.merge_seconds,
            r.bytes_per_event,
            r.bytes_on_disk as f64 / 1048576.0,
            r.log_bytes as f64 / 1048576.0,
        ));
        match &r.push {
            None => out.push_str(
                "\nPush over loopback HTTP: not measured (the corpus was written and ingested in chunks, each deleted once ingested).\n",
            ),
            Some(p) => {
                out.push_str(&format!(
                    "\nPush over loopback HTTP (zstd, {:.2} of the log bytes sent): {:.0} events/s in {:.1} s, \
                     {:.0}% of local ingest (goal ≥ 80%: {}). Pushed again while one client searches: \
                     {:.0} events/s, global search P50 {} ms ({} searches), {:.2}× idle (goal ≤ 1.5×: {}).\n",
                    p.compression_ratio,
                    p.events_per_second,
                    p.seconds,
                    p.of_local * 100.0,
                    verdict(p.of_local >= 0.8),
                    p.events_per_second_while_searching,
                    ms(p.searches_during.p50),
                    p.searches_during.samples,
                    p.p50_of_idle,
                    verdict(p.p50_of_idle <= 1.5),
                ));
            }
        }
        out.push_str("\nClickHouse statements behind the single-client rows (mean ms): ");
        let parts: Vec<String> = r
            .statements
            .iter()
            .map(|st| format!("{} {:.1} ({}×)", st.name, st.mean_ms, st.count))
            .collect();
        out.push_str(&parts.join(", "));
        out.push_str(".\n");
        let reads: Vec<String> = r
            .search_reads
            .iter()
            .map(|(path, n)| {
                let postings = r.search_postings.iter().find(|(p, _, _)| p == path);
                match postings {
                    Some((_, read, all)) if *all > 0 => format!(
                        "{path} {n} (read {:.1} % of their terms' postings)",
                        100.0 * *read as f64 / *all as f64
                    ),
                    _ => format!("{path} {n}"),
                }
            })
            .collect();
        let (read, all) = r
            .search_postings
            .iter()
            .fold((0, 0), |(read, all), (_, r, a)| (read + r, all + a));
        if all > 0 {
            out.push_str(&format!(
                "\nAll global single-client searches read {:.1} % of their terms' postings ({read} of {all}).",
                100.0 * read as f64 / all as f64
            ));
        }
        out.push_str(&format!(
            "\nSingle-client searches by the postings they read (impact tiers): {}.\n",
            reads.join(", ")
        ));
    }
    if reports.len() > 1 {
        out.push_str("\n### Growth of P50 with corpus size\n\n| operation |");
        for r in reports {
            out.push_str(&format!(" {} |", r.searchable_documents));
        }
        out.push_str(" largest ÷ smallest |\n|---|");
        for _ in reports {
            out.push_str("---|");
        }
        out.push_str("---|\n");
        for (i, row) in ROWS.iter().enumerate() {
            out.push_str(&format!("| {} |", row.name));
            for r in reports {
                out.push_str(&format!(" {} |", ms(r.rows[i].measured.client.p50)));
            }
            let first = reports[0].rows[i].measured.client.p50;
            let last = reports[reports.len() - 1].rows[i].measured.client.p50;
            out.push_str(&format!(" {:.2}× |\n", last / first.max(1e-9)));
        }
    }
    out
}

fn growth(reports: &[SizeReport]) -> Value {
    let (Some(first), Some(last)) = (reports.first(), reports.last()) else {
        return Value::Null;
    };
    let rows: Vec<Value> = first
        .rows
        .iter()
        .zip(&last.rows)
        .map(|(a, b)| json!({"name": a.name, "p50_ratio": b.measured.client.p50 / a.measured.client.p50.max(1e-9)}))
        .collect();
    json!({"from": first.searchable_documents, "to": last.searchable_documents, "rows": rows})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_goal_text_names_only_the_bounds_set() {
        let shown: Vec<String> = ROWS.iter().map(|row| goal_text(row.goal_ms)).collect();
        assert_eq!(shown[0], "P50 ≤ 25, P95 ≤ 80, P99 ≤ 150");
        assert_eq!(shown[1], "P50 ≤ 10");
        assert_eq!(shown[8], "—");
        assert_eq!(shown[9], "P50 ≤ 100");
    }
}
