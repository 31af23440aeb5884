//! `moraine-mcp eval`: how well `search_sessions` finds the session that answers a question, asked
//! the way an agent asks, on a fixed corpus of agent logs, beside a reference BM25 computed
//! outside the service. Writes a Markdown and a JSON report; numbers are reported, never asserted.

mod metrics;
mod questions;
mod reference;
mod report;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::bench::load::McpClient;
use crate::bench::{STEADY_TABLES, ingest_logs, open_database, optimize, start_engine};
use crate::config::Config;
use crate::db::Db;
use crate::{app, ids};
use metrics::{DEPTH, Hit, Outcome};
use questions::{Question, Split};
use report::{Asked, Facts};

#[derive(Debug, clap::Args)]
pub(crate) struct EvalArgs {
    /// The questions, with the sessions and turns that answer them.
    #[arg(long, default_value = "tests/eval/questions.toml")]
    questions: PathBuf,
    /// The session logs the questions are asked of.
    #[arg(long, default_value = "tests/eval/corpus")]
    corpus: PathBuf,
    /// Which questions to ask: dev (for tuning), test (held out) or all.
    #[arg(long, value_enum, default_value_t = Split::All)]
    split: Split,
    /// Where the report (report.md, report.json), the engine's environment and its log go.
    #[arg(long, default_value = "target/eval")]
    out: PathBuf,
    /// Where the engine keeps its data (default: engine-db under --out).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

/// The database the corpus is loaded into: created afresh by every run, and kept after it so
/// that its postings and statistics can be read while a ranking is studied.
const DATABASE: &str = "eval";

pub(crate) async fn run(args: EvalArgs, base: Config) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        base.clickhouse.cluster.is_empty(),
        "eval runs on the embedded engine: unset clickhouse.cluster"
    );
    let started = Instant::now();
    let all = questions::load(&args.questions)?;
    let chosen: Vec<&Question> = all.iter().filter(|q| args.split.holds(q.split)).collect();
    std::fs::create_dir_all(&args.out)?;
    let out = args.out.canonicalize()?;
    let data = args
        .data_dir
        .clone()
        .unwrap_or_else(|| out.join("engine-db"));
    eprintln!(
        "eval: {} questions ({} split) of {}, report in {}",
        chosen.len(),
        args.split.as_str(),
        args.corpus.display(),
        out.display()
    );

    let engine = start_engine(&base, &out, &data).await?;
    let (config, db) = open_database(&base, &engine.url(), DATABASE, 4).await?;
    let summary = ingest_logs(&config, &db, &args.corpus, "eval").await?;
    eprintln!("eval: ingested {summary}");
    anyhow::ensure!(
        summary.counters.unreadable.is_empty() && summary.counters.malformed == 0,
        "the corpus did not ingest cleanly: {} unreadable files, {} malformed lines",
        summary.counters.unreadable.len(),
        summary.counters.malformed
    );
    optimize(&db, STEADY_TABLES).await?;
    let targets = targets(&db, &all).await?;

    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let shutdown = CancellationToken::new();
    let service = app::spawn(config.clone(), db.clone(), listener, shutdown.clone()).await?;
    let client = McpClient::new(service.mcp_url());
    let mut service_hits = Vec::with_capacity(chosen.len());
    let asking = Instant::now();
    for q in &chosen {
        let arguments = json!({"query": q.question, "n_hits": DEPTH});
        let answer = client
            .call_structured("search_sessions", &arguments)
            .await
            .map_err(|e| anyhow::anyhow!("question {}: {e}", q.id))?;
        service_hits.push(hits_of(&answer));
    }
    let search_mean_ms = asking.elapsed().as_secs_f64() * 1000.0 / chosen.len().max(1) as f64;
    shutdown.cancel();
    let _ = service.wait().await;

    let docs = reference::searchable_events(&db, config.tools.include_self_events).await?;
    let index = reference::Index::new(docs);
    let asked: Vec<Asked<'_>> = chosen
        .iter()
        .zip(&service_hits)
        .map(|(q, hits)| {
            let target = &targets[&q.id];
            let turn = q.turn.map(|t| (target[0].as_str(), t));
            let outcome = |hits: &[Hit]| Outcome::of(hits, target, turn);
            Asked {
                question: q,
                outcomes: [
                    outcome(hits),
                    outcome(&index.search(&q.question, false, DEPTH)),
                    outcome(&index.search(&q.question, true, DEPTH)),
                ],
            }
        })
        .collect();

    let natives = native_ids(&db).await?;
    let tops: Vec<Vec<String>> = service_hits
        .iter()
        .map(|hits| {
            hits.iter()
                .map(|h| {
                    let native = natives.get(&h.session).map_or("?", String::as_str);
                    format!("{native}#{}", h.turn)
                })
                .collect()
        })
        .collect();
    let (sessions, turns, events) = counts(&db).await?;
    let facts = Facts {
        log_files: summary.files,
        sessions,
        turns,
        events,
        searchable_events: index.len(),
        ingest_seconds: summary.elapsed.as_secs_f64(),
        search_mean_ms,
        seconds: started.elapsed().as_secs_f64(),
    };
    let markdown = report::markdown(&asked, args.split, &facts);
    let json = report::json(&asked, &tops, args.split, &facts);
    std::fs::write(out.join("report.md"), &markdown)?;
    std::fs::write(
        out.join("report.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    println!("{markdown}");
    drop(engine);
    Ok(ExitCode::SUCCESS)
}

/// A search answer's hits, in rank order.
fn hits_of(answer: &Value) -> Vec<Hit> {
    answer["data"]["results"]
        .as_array()
        .map(|results| {
            results
                .iter()
                .map(|hit| Hit {
                    session: hit["session"]["id"].as_str().unwrap_or("").to_owned(),
                    turn: hit["turn"]["ordinal"]
                        .as_u64()
                        .and_then(|t| u32::try_from(t).ok())
                        .unwrap_or(0),
                })
                .collect()
        })
        .unwrap_or_default()
}

#[derive(Debug, Deserialize, clickhouse::Row)]
struct Stored {
    native_id: String,
    session_key: u64,
    turn_count: u32,
}

/// Each question's target sessions as `session:` IDs, the first one's first: the sessions the
/// ingested corpus holds under the questions' native ids. A question naming a session the corpus
/// lacks, or a turn past its session's last, is an error.
async fn targets(db: &Db, questions: &[Question]) -> anyhow::Result<HashMap<String, Vec<String>>> {
    let natives: Vec<&str> = questions
        .iter()
        .flat_map(|q| q.sessions.iter().map(String::as_str))
        .collect();
    let stored: Vec<Stored> = db
        .read(
            "eval_sessions",
            "SELECT native_id, session_key, turn_count FROM sessions FINAL \
             WHERE native_id IN {natives:Array(String)}",
        )
        .param("natives", natives)
        .fetch_all(db, db.default_deadline())
        .await?;
    let mut by_native: HashMap<&str, Vec<&Stored>> = HashMap::new();
    for s in &stored {
        by_native.entry(s.native_id.as_str()).or_default().push(s);
    }
    let mut targets = HashMap::new();
    for q in questions {
        let mut ids = Vec::new();
        for (at, native) in q.sessions.iter().enumerate() {
            let found = by_native.get(native.as_str()).ok_or_else(|| {
                anyhow::anyhow!(
                    "question {} names session {native}, which the corpus does not hold",
                    q.id
                )
            })?;
            if at == 0
                && let Some(turn) = q.turn
            {
                anyhow::ensure!(
                    found.iter().any(|s| turn <= s.turn_count),
                    "question {} names turn {turn} of session {native}, which has {} turns",
                    q.id,
                    found[0].turn_count
                );
            }
            ids.extend(found.iter().map(|s| ids::session_id(s.session_key)));
        }
        targets.insert(q.id.clone(), ids);
    }
    Ok(targets)
}

/// Every stored session's native id, by its `session:` ID.
async fn native_ids(db: &Db) -> anyhow::Result<HashMap<String, String>> {
    let rows: Vec<(u64, String)> = db
        .read(
            "eval_native_ids",
            "SELECT session_key, native_id FROM sessions FINAL",
        )
        .fetch_all(db, db.default_deadline())
        .await?;
    Ok(rows
        .into_iter()
        .map(|(key, native)| (ids::session_id(key), native))
        .collect())
}

/// Sessions, turns and events in the store.
async fn counts(db: &Db) -> anyhow::Result<(u64, u64, u64)> {
    let row: Option<(u64, u64, u64)> = db
        .read(
            "eval_counts",
            "SELECT assumeNotNull((SELECT count() FROM sessions FINAL)), \
                    assumeNotNull((SELECT count() FROM turns FINAL)), \
                    assumeNotNull((SELECT count() FROM events))",
        )
        .fetch_optional(db, db.default_deadline())
        .await?;
    Ok(row.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_hits_are_read_from_the_search_answer_in_order() {
        let answer = json!({"data": {"results": [
            {"rank": 1, "session": {"id": "session:ses_b"}, "turn": {"ordinal": 4}},
            {"rank": 2, "session": {"id": "session:ses_a"}, "turn": {"ordinal": 1}},
        ]}});
        let hits = hits_of(&answer);
        assert_eq!(
            hits,
            [
                Hit {
                    session: "session:ses_b".into(),
                    turn: 4
                },
                Hit {
                    session: "session:ses_a".into(),
                    turn: 1
                }
            ]
        );
        assert!(hits_of(&json!({"error": {}})).is_empty());
        let outcome = Outcome::of(&hits, &["session:ses_a".into()], Some(("session:ses_a", 1)));
        assert_eq!((outcome.rank, outcome.turn_hit), (Some(2), Some(true)));
    }
}
