//! Best-effort search telemetry: one `search_query_log` row per search and one
//! `search_hit_log` row per hit, written in batches by a background task.
//!
//! Recording never waits and never fails a request: a full queue or a failed insert is logged
//! and counted in `moraine_mcp_query_log_failures_total`, and the rows are dropped.

use std::time::Duration;

use serde::Serialize;
use tokio::sync::mpsc;

use crate::db::Db;
use crate::metrics::Metrics;

/// Searches buffered before new ones are dropped.
const QUEUE: usize = 10_000;
/// Searches per insert, and the longest a row waits to be written.
const BATCH: usize = 1000;
const FLUSH_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Serialize, clickhouse::Row)]
pub(crate) struct QueryRow {
    pub ts: i64,
    pub query_id: String,
    pub query: String,
    pub within_id: String,
    pub event_types: Vec<String>,
    pub harness: String,
    pub source: String,
    pub n_hits: u8,
    pub result_count: u8,
    pub truncated: bool,
    pub terms: u16,
    pub corpus_docs: u64,
    pub elapsed_ms: u32,
    pub met_sla: bool,
    pub client: String,
}

#[derive(Debug, Clone, Serialize, clickhouse::Row)]
pub(crate) struct HitRow {
    pub ts: i64,
    pub query_id: String,
    pub rank: u8,
    pub score: f32,
    pub event_id: String,
    pub session_id: String,
}

/// One search to log.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub query: QueryRow,
    pub hits: Vec<HitRow>,
}

/// The sending side; cheap to clone. Disabled logs drop everything silently.
#[derive(Clone)]
pub(crate) struct QueryLog {
    tx: Option<mpsc::Sender<Entry>>,
    metrics: Metrics,
}

impl QueryLog {
    /// Starts the writer task (when `enabled`). The task ends once every sender is dropped,
    /// after writing what it holds.
    pub(crate) fn start(db: Db, enabled: bool) -> (Self, Option<tokio::task::JoinHandle<()>>) {
        let metrics = db.metrics().clone();
        if !enabled {
            return (Self { tx: None, metrics }, None);
        }
        let (tx, rx) = mpsc::channel(QUEUE);
        let task = tokio::spawn(write_loop(db, rx));
        (
            Self {
                tx: Some(tx),
                metrics,
            },
            Some(task),
        )
    }

    pub(crate) fn record(&self, entry: Entry) {
        let Some(tx) = &self.tx else {
            return;
        };
        if tx.try_send(entry).is_err() {
            self.metrics.query_log_failure("queue_full", 1);
        }
    }
}

async fn write_loop(db: Db, mut rx: mpsc::Receiver<Entry>) {
    let mut pending: Vec<Entry> = Vec::new();
    loop {
        let next = tokio::time::timeout(FLUSH_EVERY, rx.recv()).await;
        match next {
            Ok(Some(entry)) => {
                pending.push(entry);
                if pending.len() < BATCH {
                    continue;
                }
            }
            Ok(None) => {
                flush(&db, &mut pending).await;
                return;
            }
            Err(_) => {}
        }
        flush(&db, &mut pending).await;
    }
}

async fn flush(db: &Db, pending: &mut Vec<Entry>) {
    if pending.is_empty() {
        return;
    }
    let (queries, hits): (Vec<QueryRow>, Vec<Vec<HitRow>>) =
        pending.drain(..).map(|e| (e.query, e.hits)).unzip();
    let hits: Vec<HitRow> = hits.into_iter().flatten().collect();
    let count = queries.len() as u64;
    let result = async {
        db.insert("query_log", "search_query_log", &queries, &[])
            .await?;
        db.insert("hit_log", "search_hit_log", &hits, &[]).await
    }
    .await;
    if let Err(error) = result {
        tracing::warn!(%error, searches = count, "could not write the search log; dropping these rows");
        db.metrics().query_log_failure("insert_failed", count);
    }
}
