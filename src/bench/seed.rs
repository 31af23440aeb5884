//! The baseline: the BM25 seed design on the same corpus, measured the way that design runs.
//!
//! Documents keyed by event UID; postings built by a materialized view that tokenises with a
//! regular expression and groups by (term, document); document frequency and corpus size
//! aggregated at query time from views; scoring joins postings back to documents for their
//! length. Turns and sessions are derived from the documents at query time. Queries go straight
//! to ClickHouse (no MCP, no HTTP), which favours the baseline.

use std::collections::HashMap;
use std::time::Instant;

use serde::Deserialize;

use super::load::{Percentiles, millis};
use crate::db::{Db, DbError};

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS search_documents (event_uid String, session_id String, event_type LowCardinality(String), \
     ts DateTime64(3, 'UTC'), text String, \
     doc_len UInt32 MATERIALIZED length(arrayFilter(t -> length(t) BETWEEN 2 AND 64, extractAll(lower(text), '[a-z0-9_]+')))) \
     ENGINE = ReplacingMergeTree ORDER BY event_uid",
    "CREATE TABLE IF NOT EXISTS search_postings (term String, doc_id String, tf UInt32) ENGINE = ReplacingMergeTree ORDER BY (term, doc_id)",
    "CREATE MATERIALIZED VIEW IF NOT EXISTS mv_search_postings TO search_postings AS \
     SELECT term, event_uid AS doc_id, toUInt32(count()) AS tf FROM search_documents \
     ARRAY JOIN extractAll(lower(text), '[a-z0-9_]+') AS term WHERE length(term) BETWEEN 2 AND 64 GROUP BY term, doc_id",
    "CREATE VIEW IF NOT EXISTS search_term_stats AS SELECT term, count() AS df FROM search_postings FINAL GROUP BY term",
    "CREATE VIEW IF NOT EXISTS search_corpus_stats AS SELECT count() AS docs, sum(doc_len) AS total_len FROM search_documents FINAL",
];

/// Creates the seed tables in the database behind `seed` and loads every searchable event of
/// `source_database`. Returns the load time in seconds.
pub(crate) async fn load(seed: &Db, source_database: &str) -> Result<f64, DbError> {
    for statement in SCHEMA {
        seed.write("seed_schema", statement)
            .execute(seed, seed.default_deadline())
            .await?;
    }
    let started = Instant::now();
    seed.write(
        "seed_load",
        "INSERT INTO search_documents (event_uid, session_id, event_type, ts, text) \
         SELECT toString(event_key), toString(session_key), toString(event_type), ts, text \
         FROM {source:Identifier}.events WHERE searchable",
    )
    .param("source", source_database)
    .setting("max_insert_threads", "2")
    .execute(
        seed,
        std::time::Instant::now() + std::time::Duration::from_secs(3600),
    )
    .await?;
    Ok(started.elapsed().as_secs_f64())
}

/// The seed tokenizer: ASCII words of 2–64 characters, lower-cased.
fn seed_terms(query: &str) -> Vec<String> {
    static WORD: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let word = WORD.get_or_init(|| regex::Regex::new("[a-z0-9_]+").expect("valid regex"));
    let lower = query.to_lowercase();
    let mut terms: Vec<String> = word
        .find_iter(&lower)
        .map(|m| m.as_str().to_owned())
        .filter(|t| (2..=64).contains(&t.len()))
        .collect();
    terms.dedup();
    terms
}

#[derive(Deserialize, clickhouse::Row)]
struct Corpus {
    docs: u64,
    total_len: u64,
}

#[derive(Deserialize, clickhouse::Row)]
struct Df {
    term: String,
    df: u64,
}

/// Where a seed search looks.
pub(crate) enum SeedScope {
    All,
    Session(u64),
    /// The seed has no turns: a session and the turn's time range.
    TurnRange(u64, i64, i64),
}

/// One seed search: corpus statistics, document frequencies, then scoring (three round trips,
/// as the seed design runs them). Returns the elapsed milliseconds.
pub(crate) async fn search(seed: &Db, query: &str, scope: SeedScope) -> Result<f64, DbError> {
    let started = Instant::now();
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    let terms = seed_terms(query);
    if terms.is_empty() {
        return Ok(millis(started.elapsed()));
    }
    let corpus: Option<Corpus> = seed
        .read(
            "seed_corpus",
            "SELECT docs, total_len FROM search_corpus_stats",
        )
        .fetch_optional(seed, deadline)
        .await?;
    let corpus = corpus.unwrap_or(Corpus {
        docs: 1,
        total_len: 1,
    });
    let dfs: Vec<Df> = seed
        .read(
            "seed_df",
            "SELECT term, df FROM search_term_stats WHERE term IN {terms:Array(String)}",
        )
        .param("terms", &terms)
        .fetch_all(seed, deadline)
        .await?;
    let df: HashMap<String, u64> = dfs.into_iter().map(|d| (d.term, d.df)).collect();
    let n = corpus.docs.max(1) as f64;
    let idfs: Vec<f64> = terms
        .iter()
        .map(|t| {
            let d = *df.get(t).unwrap_or(&0) as f64;
            (1.0 + (n - d + 0.5) / (d + 0.5)).ln().max(0.0)
        })
        .collect();
    let avgdl = (corpus.total_len as f64 / n).max(1.0);
    let scope_sql = match &scope {
        SeedScope::All => "",
        SeedScope::Session(_) => "AND d.session_id = {s:String}",
        SeedScope::TurnRange(..) => {
            "AND d.session_id = {s:String} AND d.ts BETWEEN fromUnixTimestamp64Milli({from:Int64}) AND fromUnixTimestamp64Milli({to:Int64})"
        }
    };
    let (session, from, to) = match &scope {
        SeedScope::All => (0, 0, 0),
        SeedScope::Session(s) => (*s, 0, 0),
        SeedScope::TurnRange(s, from, to) => (*s, *from, *to),
    };
    let sql = format!(
        "SELECT p.doc_id, sum(transform(p.term, {{terms:Array(String)}}, {{idfs:Array(Float64)}}, 0.) * p.tf * 2.2 \
         / (p.tf + 1.2 * (0.25 + 0.75 * d.doc_len / {{avgdl:Float64}}))) AS score \
         FROM search_postings AS p INNER JOIN search_documents AS d ON d.event_uid = p.doc_id \
         WHERE p.term IN {{terms:Array(String)}} \
           AND d.event_type IN ('user_input', 'assistant_response', 'tool_response') {scope_sql} \
         GROUP BY p.doc_id ORDER BY score DESC, p.doc_id LIMIT 11"
    );
    let _: Vec<(String, f64)> = seed
        .read("seed_search", &sql)
        .param("terms", &terms)
        .param("idfs", &idfs)
        .param("avgdl", avgdl)
        .param("s", session.to_string())
        .param("from", from)
        .param("to", to)
        .fetch_all(seed, deadline)
        .await?;
    Ok(millis(started.elapsed()))
}

/// The seed's session browse: sessions aggregated from documents at query time.
pub(crate) async fn list(seed: &Db, start_ms: i64, end_ms: i64) -> Result<f64, DbError> {
    let started = Instant::now();
    let _: Vec<(String, i64, i64, u64)> = seed
        .read(
            "seed_list",
            "SELECT session_id, toUnixTimestamp64Milli(min(ts)) AS started, toUnixTimestamp64Milli(max(ts)) AS updated, count() \
             FROM search_documents FINAL GROUP BY session_id \
             HAVING updated >= {start:Int64} AND started < {end:Int64} ORDER BY updated DESC, session_id DESC LIMIT 21",
        )
        .param("start", start_ms)
        .param("end", end_ms)
        .fetch_all(seed, Instant::now() + std::time::Duration::from_secs(30))
        .await?;
    Ok(millis(started.elapsed()))
}

/// The seed's open(event): the document by UID, then its session's ordered context.
pub(crate) async fn open_event(seed: &Db, session: u64, event: u64) -> Result<f64, DbError> {
    let started = Instant::now();
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    let _: Vec<(String, String)> = seed
        .read(
            "seed_open_event",
            "SELECT event_uid, text FROM search_documents FINAL WHERE event_uid = {e:String}",
        )
        .param("e", event.to_string())
        .fetch_all(seed, deadline)
        .await?;
    let _: Vec<(String, i64)> = seed
        .read(
            "seed_open_context",
            "SELECT event_uid, toUnixTimestamp64Milli(ts) FROM search_documents FINAL WHERE session_id = {s:String} ORDER BY ts, event_uid",
        )
        .param("s", session.to_string())
        .fetch_all(seed, deadline)
        .await?;
    Ok(millis(started.elapsed()))
}

/// The seed's open(turn): the session's documents with turns numbered by a window function.
pub(crate) async fn open_turn(seed: &Db, session: u64, ordinal: u32) -> Result<f64, DbError> {
    let started = Instant::now();
    let _: Vec<(String, String)> = seed
        .read(
            "seed_open_turn",
            "SELECT event_uid, left(text, 200) FROM ( \
               SELECT event_uid, ts, text, sum(event_type = 'user_input') OVER (ORDER BY ts, event_uid) AS turn_seq \
               FROM search_documents FINAL WHERE session_id = {s:String}) \
             WHERE turn_seq = {t:UInt32} ORDER BY ts, event_uid",
        )
        .param("s", session.to_string())
        .param("t", ordinal)
        .fetch_all(seed, Instant::now() + std::time::Duration::from_secs(30))
        .await?;
    Ok(millis(started.elapsed()))
}

/// The seed's open(session): every turn summarised from the session's documents.
pub(crate) async fn open_session(seed: &Db, session: u64) -> Result<f64, DbError> {
    let started = Instant::now();
    let _: Vec<(u64, u64, String)> = seed
        .read(
            "seed_open_session",
            "SELECT turn_seq, count(), anyIf(left(text, 200), event_type = 'user_input') FROM ( \
               SELECT ts, event_type, text, sum(event_type = 'user_input') OVER (ORDER BY ts, event_uid) AS turn_seq \
               FROM search_documents FINAL WHERE session_id = {s:String}) \
             GROUP BY turn_seq ORDER BY turn_seq",
        )
        .param("s", session.to_string())
        .fetch_all(seed, Instant::now() + std::time::Duration::from_secs(30))
        .await?;
    Ok(millis(started.elapsed()))
}

/// Runs `calls` one after another and summarises their latencies.
pub(crate) async fn measure<F, Fut>(calls: usize, mut call: F) -> Percentiles
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Result<f64, DbError>>,
{
    let mut samples = Vec::with_capacity(calls);
    for i in 0..calls {
        match call(i).await {
            Ok(ms) => samples.push(ms),
            Err(error) => tracing::warn!(%error, "seed baseline query failed"),
        }
    }
    Percentiles::of(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_seed_tokenizer_is_ascii_regex() {
        assert_eq!(
            seed_terms("Fix run_migration café a 数据"),
            ["fix", "run_migration", "caf"]
        );
    }
}
