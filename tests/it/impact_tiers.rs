//! Impact tiers give exactly what reading every posting gives: on generated corpora (Zipfian
//! words, documents of every length, words repeated within them), the same searches through
//! two services on the same data, one reading tiers and one reading every posting, return the
//! same hits with the same scores, before and after part of the corpus is retracted; and the
//! tiered service does take the tier paths (`/metrics`).

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Mcp, Rng, TestServer};
use moraine_mcp::config::Settings;
use moraine_mcp::db::Db;
use moraine_mcp::metrics::Metrics;
use serde_json::{Value, json};

/// A word of a Zipf-like vocabulary: rank `r` about as likely as `1 / r`.
fn word(rng: &mut Rng, vocabulary: u64) -> String {
    let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    let rank = (vocabulary as f64).powf(u) as u64;
    format!("w{rank}")
}

/// A text of `words` words, some repeated in runs (so term frequencies vary).
fn text(rng: &mut Rng, words: usize, vocabulary: u64) -> String {
    let mut out = Vec::new();
    while out.len() < words {
        let word = word(rng, vocabulary);
        let repeat = if rng.below(6) == 0 {
            1 + rng.below(40)
        } else {
            1
        };
        for _ in 0..repeat {
            out.push(word.clone());
        }
    }
    out.join(" ")
}

/// Claude Code sessions: prompts, answers and tool outputs from a few words to a few thousand.
fn generate(dir: &Path, seed: u64, sessions: u64, vocabulary: u64) {
    let mut rng = Rng(seed);
    let project = dir.join("-bench-tiers");
    std::fs::create_dir_all(&project).unwrap();
    for s in 0..sessions {
        let id = format!("{seed:08x}-0000-4000-8000-{s:012x}");
        let mut lines = Vec::new();
        let mut at = 1_767_000_000_000i64 + s as i64 * 3_600_000;
        let mut record = |kind: &str, message: Value, at: i64| {
            let ts = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(at) * 1_000_000)
                .unwrap()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap();
            lines.push(
                json!({"type": kind, "sessionId": id, "timestamp": ts, "cwd": "/home/dev/tiers", "message": message})
                    .to_string(),
            );
        };
        for t in 0..(1 + rng.below(6)) {
            at += 1000;
            let prompt_len = 2 + rng.below(20);
            record(
                "user",
                json!({"role": "user", "content": text(&mut rng, prompt_len, vocabulary)}),
                at,
            );
            for step in 0..rng.below(3) {
                at += 1000;
                let tool = format!("toolu_{s}_{t}_{step}");
                record(
                    "assistant",
                    json!({"role": "assistant", "model": "m", "content": [{"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": "make"}}]}),
                    at,
                );
                at += 1000;
                let length = match rng.below(10) {
                    0 => 1000 + rng.below(3000),
                    1..=3 => 100 + rng.below(900),
                    _ => 1 + rng.below(100),
                };
                record(
                    "user",
                    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool, "content": text(&mut rng, length, vocabulary)}]}),
                    at,
                );
            }
            at += 1000;
            let answer_len = 3 + rng.below(120);
            record(
                "assistant",
                json!({"role": "assistant", "model": "m", "content": [{"type": "text", "text": text(&mut rng, answer_len, vocabulary)}], "stop_reason": "end_turn"}),
                at,
            );
        }
        std::fs::write(project.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tiers-{name}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A service of its own (its own metrics) on the database `settings` names.
async fn service(mut settings: Settings, tiers: bool) -> TestServer {
    settings.tools.impact_tiers = tiers;
    // The corpora are small, and queries of many terms are where the bounds are subtle: every
    // global search tries the tiers.
    settings.tools.impact_tiers_min_postings = 0;
    settings.tools.impact_tiers_max_terms = 32;
    let db = Db::new(&settings.clickhouse, Metrics::new(&settings.sla));
    db.wait_until_ready(Duration::from_secs(30)).await.unwrap();
    TestServer::start(settings, db).await
}

/// The hits of a search, without what differs from call to call (timings).
fn hits(answer: &Value) -> Value {
    let mut data = answer["data"].clone();
    for hit in data["results"].as_array_mut().unwrap() {
        hit.as_object_mut().unwrap().remove("performance");
    }
    data
}

/// Searches made of frequent words, a frequent and a rare one, filtered and not.
fn queries() -> Vec<Value> {
    let mut out = Vec::new();
    for query in [
        "w1",
        "w2",
        "w1 w2",
        "w1 w2 w3",
        "w1 w3 w5 w8",
        "w2 w40",
        "w1 w700",
        "w4 w9 w30",
        "w6 w11",
        "w1 w2 w3 w4 w5 w6",
        "w300 w1",
    ] {
        for n_hits in [1, 10, 50] {
            out.push(json!({"query": query, "n_hits": n_hits}));
        }
        out.push(json!({"query": query, "event_types": ["tool_response"]}));
        out.push(json!({"query": query, "event_types": ["user_input", "assistant_response"], "n_hits": 5}));
        out.push(json!({"query": query, "harness": "claude-code", "n_hits": 20}));
    }
    out
}

/// Runs every query through both services and compares the answers.
async fn compare(tiered: &TestServer, exhaustive: &TestServer) {
    let mut a = Mcp::legacy(&tiered.mcp_url, None).await;
    let mut b = Mcp::legacy(&exhaustive.mcp_url, None).await;
    for query in queries() {
        let x = a.ok("search_sessions", query.clone()).await;
        let y = b.ok("search_sessions", query.clone()).await;
        assert!(
            !y["data"]["results"].as_array().unwrap().is_empty(),
            "{query}: nothing found, the corpus does not exercise it"
        );
        let ranked = |answer: &Value| -> Vec<(String, f64)> {
            answer["data"]["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| {
                    (
                        h["id"].as_str().unwrap().to_owned(),
                        h["score"].as_f64().unwrap(),
                    )
                })
                .collect()
        };
        assert_eq!(ranked(&x), ranked(&y), "{query}");
        assert_eq!(hits(&x), hits(&y), "{query}");
    }
}

/// The service's `/metrics` text.
async fn metrics(server: &TestServer) -> String {
    common::send("GET", &format!("{}/metrics", server.base), &[], "")
        .await
        .body
}

/// The sum of counter `name` over its series carrying every one of `labels` (`key="value"`).
fn counter(metrics: &str, name: &str, labels: &[&str]) -> u64 {
    common::metric_sum(metrics, name, labels) as u64
}

/// The searches the tiered service answered by each path: one tier read, two tier reads, and
/// every posting (after tiers, or at once).
fn paths(metrics: &str) -> (u64, u64, u64) {
    let count = |path: &str| {
        let label = format!("path=\"{path}\"");
        counter(metrics, "moraine_mcp_search_reads_total", &[&label])
    };
    (
        count("one_tier_read"),
        count("two_tier_reads"),
        count("tiers_then_all_postings") + count("all_postings"),
    )
}

/// The postings the tiered service's reads by `path` read, and their terms' postings.
fn tier_postings(metrics: &str, path: &str) -> (u64, u64) {
    let path = format!("path=\"{path}\"");
    let sum = |postings: &str| {
        let label = format!("postings=\"{postings}\"");
        counter(
            metrics,
            "moraine_mcp_search_postings_total",
            &[&path, &label],
        )
    };
    (sum("read"), sum("of_terms"))
}

#[tokio::test]
async fn tier_reads_give_exactly_the_hits_and_scores_of_reading_every_posting() {
    let (mut one_read, mut two_reads) = (0, 0);
    let mut tier_read = (0, 0);
    for (seed, sessions, vocabulary) in [(7, 160, 2_000), (11, 90, 400)] {
        let dir = scratch("corpus");
        generate(&dir, seed, sessions, vocabulary);
        let (settings, db) = common::fresh_db().await;
        let summary = common::ingest_paths(&settings, &db, &dir).await;
        assert!(summary.counters.events > 1000, "{summary}");
        let tiered = service(settings.clone(), true).await;
        let exhaustive = service(settings.clone(), false).await;
        compare(&tiered, &exhaustive).await;
        let scraped = metrics(&tiered).await;
        let (one, two, all) = paths(&scraped);
        let mut postings = (0, 0);
        for path in [
            "one_tier_read",
            "two_tier_reads",
            "tiers_then_all_postings",
            "all_postings",
        ] {
            let (read, of_terms) = tier_postings(&scraped, path);
            eprintln!("corpus {seed}: {path}: read {read} of their terms' {of_terms} postings");
            postings = (postings.0 + read, postings.1 + of_terms);
            if path.ends_with("tier_read") || path.ends_with("tier_reads") {
                tier_read = (tier_read.0 + read, tier_read.1 + of_terms);
            }
        }
        eprintln!(
            "corpus {seed}: {one} searches in one tier read, {two} in two, {all} read every \
             posting; all global searches read {} of {} postings",
            postings.0, postings.1
        );
        one_read += one;
        two_reads += two;

        // After a retraction (a log rewritten shorter), still exact.
        let mut logs: Vec<PathBuf> = std::fs::read_dir(dir.join("-bench-tiers"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        logs.sort();
        for log in logs.iter().take(10) {
            let text = std::fs::read_to_string(log).unwrap();
            let kept: Vec<&str> = text.lines().take(2).collect();
            std::fs::write(log, kept.join("\n") + "\n").unwrap();
        }
        common::ingest_paths(&settings, &db, &dir).await;
        // Fresh services: each caches statistics for a while, and both must score with the
        // statistics of the corpus as it now is.
        tiered.stop().await;
        exhaustive.stop().await;
        let tiered = service(settings.clone(), true).await;
        let exhaustive = service(settings.clone(), false).await;
        compare(&tiered, &exhaustive).await;
        tiered.stop().await;
        exhaustive.stop().await;
        std::fs::remove_dir_all(dir).unwrap();
    }
    // Tier reads were taken, not only reads of every posting, and read fewer postings than
    // their terms have. (A first read alone rarely holds the answer on corpora this small.)
    assert!(two_reads > 0, "one read {one_read}, two reads {two_reads}");
    assert!(
        tier_read.0 < tier_read.1,
        "tier reads read {} of their terms' {} postings",
        tier_read.0,
        tier_read.1
    );
}

#[derive(Debug, clickhouse::Row, serde::Deserialize)]
struct SortingKey {
    sorting_key: String,
}

async fn postings_key(db: &Db) -> String {
    let key: Option<SortingKey> = db
        .read(
            "t",
            "SELECT sorting_key FROM system.tables WHERE database = currentDatabase() AND name = 'postings'",
        )
        .fetch_optional(db, db.default_deadline())
        .await
        .unwrap();
    key.unwrap().sorting_key
}

/// A hash of every posting's every column but the tier.
async fn postings_hash(db: &Db) -> (u64, u64) {
    db.read(
        "t",
        "SELECT count(), sum(cityHash64(term, sess, doc, tf, doc_len, kind, turn)) FROM postings",
    )
    .fetch_optional(db, db.default_deadline())
    .await
    .unwrap()
    .unwrap()
}

#[tokio::test]
async fn an_index_of_the_previous_schema_is_upgraded_in_place_and_keeps_every_posting() {
    let dir = scratch("upgrade");
    generate(&dir, 5, 40, 600);
    let settings = common::without_vectors(common::config_for(&common::shared_engine_url()));
    let db = Db::new(&settings.clickhouse, Metrics::new(&settings.sla));
    db.wait_until_ready(Duration::from_secs(30)).await.unwrap();
    // The schema before 009, which re-keyed the index.
    moraine_mcp::migrate::migrate_to(&settings.clickhouse, &db, 8)
        .await
        .unwrap();
    assert_eq!(postings_key(&db).await, "term, sess, doc");
    common::ingest_paths(&settings, &db, &dir).await;
    let before = common::snapshot(&db).await;
    let before_hash = postings_hash(&db).await;

    moraine_mcp::migrate::migrate_to(&settings.clickhouse, &db, 10)
        .await
        .unwrap();
    assert_eq!(postings_key(&db).await, "term, tier, sess, doc");
    assert_eq!(common::snapshot(&db).await, before, "every posting kept");
    assert_eq!(
        postings_hash(&db).await,
        before_hash,
        "every column of every posting"
    );
    // Cut off before its record: the upgrade runs again and changes nothing.
    db.write(
        "t",
        "ALTER TABLE schema_migrations DELETE WHERE version >= 9 SETTINGS mutations_sync = 2",
    )
    .execute(&db, db.default_deadline())
    .await
    .unwrap();
    moraine_mcp::migrate::migrate_to(&settings.clickhouse, &db, 10)
        .await
        .unwrap();
    assert_eq!(common::snapshot(&db).await, before);

    // New logs are indexed into the upgraded table, as into a new database.
    moraine_mcp::migrate::migrate(&settings.clickhouse, &db)
        .await
        .unwrap();
    generate(&dir, 6, 20, 600);
    common::ingest_paths(&settings, &db, &dir).await;
    let (fresh_settings, fresh) = common::fresh_db().await;
    let fresh_settings = common::without_vectors(fresh_settings);
    common::ingest_paths(&fresh_settings, &fresh, &dir).await;
    let upgraded = common::snapshot(&db).await;
    common::assert_statistics_exact(&upgraded);
    assert_eq!(upgraded, common::snapshot(&fresh).await);
    let tiered = service(settings.clone(), true).await;
    let exhaustive = service(settings, false).await;
    compare(&tiered, &exhaustive).await;
    tiered.stop().await;
    exhaustive.stop().await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn tier_bounds_hold_for_every_bm25_setting() {
    // The bounds follow k1 and b (a length that does not count when b = 0, a frequency that
    // does not count when k1 = 0); each setting is compared on the same corpus.
    let dir = scratch("settings");
    generate(&dir, 13, 80, 800);
    let (settings, db) = common::fresh_db().await;
    common::ingest_paths(&settings, &db, &dir).await;
    let (mut one_read, mut two_reads) = (0, 0);
    for (k1, b) in [(0.0, 0.75), (1.2, 0.0), (1.2, 1.0), (10.0, 0.5), (0.3, 1.0)] {
        let mut settings = settings.clone();
        settings.bm25.k1 = k1;
        settings.bm25.b = b;
        let tiered = service(settings.clone(), true).await;
        let exhaustive = service(settings, false).await;
        compare(&tiered, &exhaustive).await;
        let (one, two, _) = paths(&metrics(&tiered).await);
        one_read += one;
        two_reads += two;
        tiered.stop().await;
        exhaustive.stop().await;
    }
    assert!(one_read + two_reads > 0, "no search read tiers only");
    std::fs::remove_dir_all(dir).unwrap();
}
