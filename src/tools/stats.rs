//! BM25 statistics for queries: document frequencies and corpus size over the event types a
//! search covers, read from the precomputed `term_df` and `corpus_stats` tables (kept per
//! event type) and kept for a short while in process, per set of types.
//!
//! Reading them inside the scoring statement (as scalar subqueries) doubled its cost; terms
//! repeat heavily across queries (their frequencies are Zipfian), so a small cache removes the
//! lookup for most searches. The corpus size is read again every second, and a new size drops
//! the cached frequencies: a search a second after an ingest (by any process) ranks with exact
//! statistics. A term absent from the corpus is never cached, so new words are found at once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::db::{Db, DbError};

/// How long a frequency is reused while the corpus size stays the same.
const TTL: Duration = Duration::from_secs(30);
/// How long the corpus size is reused. A new size (something was ingested or removed, by this
/// process or another) drops every cached frequency, so a search a second after an ingest ranks
/// exactly as a server that has just started.
const CORPUS_TTL: Duration = Duration::from_secs(1);
/// Cached terms before the cache starts over.
const MAX_TERMS: usize = 200_000;

/// What scoring needs for one query.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QueryStats {
    /// Inverse document frequency of each query term, in order.
    pub idfs: Vec<f64>,
    /// Document frequency of each query term, in order (how many postings it has).
    pub dfs: Vec<u64>,
    pub average_length: f64,
}

#[derive(Default)]
struct Cache {
    corpus: Option<(Instant, u64, f64)>,
    df: HashMap<u64, (Instant, u64)>,
}

/// The shared statistics cache: one [`Cache`] per set of event types searched (a bit per
/// type code), and the whole corpus's size.
#[derive(Default)]
pub(crate) struct Statistics {
    caches: Mutex<HashMap<u16, Cache>>,
    documents: std::sync::atomic::AtomicU64,
}

#[derive(Debug, clickhouse::Row, Deserialize)]
struct StatRow {
    /// 0: the searched types (a = documents, b = total length); 1: a term (a = hash, b = df);
    /// 2: the whole corpus (a = documents).
    kind: u8,
    a: u64,
    b: i64,
}

/// Frequencies of the missing terms (a macro, so [`STATS_SQL`] can extend it).
macro_rules! df_sql {
    () => {
        "SELECT toUInt8(1) AS kind, term AS a, sum(df) AS b FROM term_df WHERE term IN {terms:Array(UInt64)} AND event_type IN {types:Array(UInt8)} GROUP BY term"
    };
}
const DF_SQL: &str = df_sql!();

/// The frequencies and the corpus size, in one statement, when the cached size has expired too.
/// (Each table an embedded-engine statement reads costs about 2 ms, so the size is only read
/// when needed.)
const STATS_SQL: &str = concat!(
    df_sql!(),
    // One read of `corpus_stats` gives both the searched types' rows and the whole corpus's.
    " UNION ALL SELECT r.1, r.2, r.3 FROM (SELECT \
     toUInt64(greatest(sumIf(docs, event_type IN {types:Array(UInt8)}), 0)) AS d, \
     toInt64(sumIf(total_len, event_type IN {types:Array(UInt8)})) AS l, \
     toUInt64(greatest(sum(docs), 0)) AS n FROM corpus_stats) \
     ARRAY JOIN [(toUInt8(0), d, l), (toUInt8(2), n, toInt64(0))] AS r"
);

impl Statistics {
    /// The statistics of `terms` among the documents of event `types` (type codes), from the
    /// cache where fresh, otherwise from ClickHouse.
    pub(crate) async fn for_terms(
        &self,
        db: &Db,
        terms: &[u64],
        types: &[u8],
        deadline: Instant,
    ) -> Result<QueryStats, DbError> {
        let now = Instant::now();
        let set = types.iter().fold(0u16, |set, t| set | 1 << (t % 16));
        let (missing, corpus_fresh) = {
            let caches = self.caches.lock().expect("statistics lock");
            let empty = Cache::default();
            let cache = caches.get(&set).unwrap_or(&empty);
            let corpus_fresh = cache
                .corpus
                .is_some_and(|(at, _, _)| now.duration_since(at) < CORPUS_TTL);
            let missing: Vec<u64> = terms
                .iter()
                .copied()
                .filter(|t| {
                    cache
                        .df
                        .get(t)
                        .is_none_or(|(at, _)| now.duration_since(*at) >= TTL)
                })
                .collect();
            if corpus_fresh && missing.is_empty() {
                return Ok(cache.stats(terms));
            }
            (missing, corpus_fresh)
        };
        // When the corpus size is read again, so are the frequencies of every term asked for:
        // they are dropped from the cache if the size changed.
        let asked = if corpus_fresh { &missing[..] } else { terms };
        let sql = if corpus_fresh { DF_SQL } else { STATS_SQL };
        let rows: Vec<StatRow> = db
            .read("search_stats", sql)
            .param("terms", asked)
            .param("types", types)
            // On a cluster every shard counts every term (for its own documents): a filter on
            // `term` must not narrow the read to the shard the sharding key names.
            .setting("optimize_skip_unused_shards", "0")
            .fetch_all(db, deadline)
            .await?;
        if let Some(row) = rows.iter().find(|r| r.kind == 2) {
            self.documents
                .store(row.a, std::sync::atomic::Ordering::Relaxed);
        }
        let mut caches = self.caches.lock().expect("statistics lock");
        let cache = caches.entry(set).or_default();
        if cache.df.len() + asked.len() > MAX_TERMS {
            cache.df.clear();
        }
        if let Some(row) = rows.iter().find(|r| r.kind == 0) {
            let average = row.b.max(0) as f64 / row.a.max(1) as f64;
            let changed = cache
                .corpus
                .is_none_or(|(_, n, avg)| n != row.a || avg != average);
            if changed {
                cache.df.clear();
            }
            cache.corpus = Some((now, row.a, average));
        }
        // Terms asked for that no document holds are not remembered (they read as 0): a log
        // ingested a moment later, by this process or another, is found by its words at once.
        for term in asked {
            cache.df.remove(term);
        }
        for row in rows.iter().filter(|r| r.kind == 1) {
            cache.df.insert(row.a, (now, row.b.max(0) as u64));
        }
        Ok(cache.stats(terms))
    }

    /// Searchable documents of every type as of the last read (0 before any search).
    pub(crate) fn documents(&self) -> u64 {
        self.documents.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Cache {
    fn stats(&self, terms: &[u64]) -> QueryStats {
        let (_, documents, average_length) = self.corpus.unwrap_or((Instant::now(), 0, 1.0));
        let n = documents.max(1) as f64;
        let dfs: Vec<u64> = terms
            .iter()
            .map(|t| self.df.get(t).map_or(0, |(_, df)| *df))
            .collect();
        let idfs = dfs
            .iter()
            .map(|&df| {
                // A frequency can be read a moment ahead of the corpus size (two tables, one
                // insert): never more documents than the corpus holds, or the log goes NaN.
                let df = (df as f64).min(n);
                // Lucene's form: never negative, even for terms in most documents.
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
            })
            .collect();
        QueryStats {
            idfs,
            dfs,
            average_length: average_length.max(1.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_idf_is_lucene_and_positive() {
        let mut cache = Cache {
            corpus: Some((Instant::now(), 100, 10.0)),
            ..Cache::default()
        };
        cache.df.insert(1, (Instant::now(), 90));
        cache.df.insert(2, (Instant::now(), 1));
        let stats = cache.stats(&[1, 2]);
        assert!(stats.idfs[0] > 0.0 && stats.idfs[0] < stats.idfs[1]);
        assert!((stats.idfs[1] - (1.0f64 + 99.5 / 1.5).ln()).abs() < 1e-12);
        assert_eq!(stats.average_length, 10.0);
        // A frequency read ahead of the corpus size: still a finite, positive weight.
        cache.df.insert(3, (Instant::now(), 150));
        let idf = cache.stats(&[3]).idfs[0];
        assert!(idf.is_finite() && idf > 0.0, "{idf}");
    }
}
