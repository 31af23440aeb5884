//! Writing batches to ClickHouse: retractions first, then events (which the materialized views
//! index in the same insert), turns, sessions, archived bytes, and last the checkpoints that
//! cover them.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use super::files::LogFile;
use super::reader::{Batch, Retraction, Stored};
use crate::db::gate::WhenMigrating;
use crate::db::{Db, DbError};
use crate::rows::{CheckpointRow, SessionVectorRow};

/// Settings for the event insert: the index views run in parallel with the events view.
/// Ingest is background work: its engine threads yield to searches when the CPU is short
/// (ClickHouse applies the nice value only with CAP_SYS_NICE, and ignores it otherwise).
const INGEST_SETTINGS: &[(&str, &str)] = &[("os_thread_priority", "10")];
/// Block deduplication stays off for events: `term_df` and `corpus_stats` deduplicate the
/// retractions' tokened inserts, and two batches' statistics may well be equal.
const EVENT_INSERT_SETTINGS: &[(&str, &str)] = &[
    ("parallel_view_processing", "1"),
    ("os_thread_priority", "10"),
    ("insert_deduplicate", "0"),
    ("deduplicate_blocks_in_dependent_materialized_views", "0"),
];

/// Whether [`load_stored`] looks for sessions holding an event twice, which costs a pass over
/// their event keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doubles {
    Look,
    Skip,
}

/// What ClickHouse already holds for each of `files`, by file key.
pub async fn load_stored(
    db: &Db,
    files: &[LogFile],
    doubles: Doubles,
) -> Result<HashMap<u64, Stored>, DbError> {
    let sql = match doubles {
        Doubles::Look => {
            "SELECT session_key, max(line_no), count() != uniqExact(event_key) FROM events \
             WHERE session_key IN {keys:Array(UInt64)} GROUP BY session_key"
        }
        Doubles::Skip => {
            "SELECT session_key, max(line_no), false FROM events \
             WHERE session_key IN {keys:Array(UInt64)} GROUP BY session_key"
        }
    };
    let mut stored: HashMap<u64, Stored> = HashMap::new();
    for chunk in files.chunks(10_000) {
        let deadline = db.default_deadline();
        let file_keys: Vec<u64> = chunk.iter().map(|f| f.file_key).collect();
        let session_keys: Vec<u64> = chunk.iter().map(|f| f.session_key).collect();
        let checkpoints: Vec<CheckpointRow> = db
            .read(
                "ingest_checkpoints",
                "SELECT ?fields FROM ingest_checkpoints FINAL WHERE file_key IN {keys:Array(UInt64)}",
            )
            .param("keys", &file_keys)
            .fetch_all(db, deadline)
            .await?;
        // A session holding an event twice was written by a killed run after the run that
        // followed it had read its checkpoints: it is read again from the start.
        let lines: HashMap<u64, (u32, bool)> = db
            .read("ingest_max_lines", sql)
            .param("keys", &session_keys)
            .fetch_all::<(u64, u32, bool)>(db, deadline)
            .await?
            .into_iter()
            .map(|(key, max_line, doubled)| (key, (max_line, doubled)))
            .collect();
        let mut by_key: HashMap<u64, CheckpointRow> =
            checkpoints.into_iter().map(|c| (c.file_key, c)).collect();
        for file in chunk {
            stored.insert(
                file.file_key,
                Stored {
                    checkpoint: by_key.remove(&file.file_key),
                    max_line: lines.get(&file.session_key).map(|l| l.0),
                    doubled: lines.get(&file.session_key).is_some_and(|l| l.1),
                },
            );
        }
    }
    Ok(stored)
}

/// Writes one batch. Every row gets the same version, newer than any written before. While
/// tool calls run, the write first gives way to them (see [`Db::paced_write`]); while a schema
/// migration runs, it waits or is refused (see [`crate::db::gate`]).
pub async fn write_batch(
    db: &Db,
    batch: Batch,
    version: u64,
    when_migrating: WhenMigrating,
) -> Result<(), DbError> {
    let mut batch = Some(batch);
    loop {
        if when_migrating == WhenMigrating::Wait {
            // A migration is waited out before the write's turn, not during it: a paced turn
            // held for a migration would hold up the pushes of the same server.
            drop(db.enter_write(WhenMigrating::Wait).await?);
        }
        // The permit is asked for once the write's turn has come, so that a migration does not
        // wait for writes that are only waiting to start.
        let written = db
            .paced_write(async {
                let permit = match db.enter_write(WhenMigrating::Refuse).await {
                    Err(DbError::Migrating) if when_migrating == WhenMigrating::Wait => {
                        return None;
                    }
                    Err(error) => return Some(Err(error)),
                    Ok(permit) => permit,
                };
                let written = write_now(db, batch.take().expect("written once"), version).await;
                drop(permit);
                Some(written)
            })
            .await;
        if let Some(written) = written {
            return written;
        }
    }
}

async fn write_now(db: &Db, mut batch: Batch, version: u64) -> Result<(), DbError> {
    for retraction in &batch.retractions {
        tracing::info!(
            session_key = retraction.session_key,
            after_line = retraction.after_line,
            "removing rows before re-reading"
        );
        retract(db, retraction).await?;
    }
    for row in &mut batch.events {
        row.batch = version;
    }
    let started = std::time::Instant::now();
    db.insert(
        "ingest_events",
        "event_ingest",
        &batch.events,
        EVENT_INSERT_SETTINGS,
    )
    .await?;
    tracing::debug!(
        events = batch.events.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "inserted events"
    );
    for row in &mut batch.turns {
        row.version = version;
    }
    db.insert("ingest_turns", "turns", &batch.turns, INGEST_SETTINGS)
        .await?;
    for row in &mut batch.sessions {
        row.version = version;
    }
    db.insert(
        "ingest_sessions",
        "sessions",
        &batch.sessions,
        INGEST_SETTINGS,
    )
    .await?;
    let vectors: Vec<SessionVectorRow> = batch
        .sessions
        .iter_mut()
        .filter(|session| !session.prose_vector.is_empty())
        .map(|session| SessionVectorRow {
            sess: session.session_key,
            vector: std::mem::take(&mut session.prose_vector),
            version,
        })
        .collect();
    db.insert(
        "ingest_session_vectors",
        "session_vectors",
        &vectors,
        INGEST_SETTINGS,
    )
    .await?;
    let now = crate::text::now_ms();
    for row in &mut batch.chunks {
        row.received_at = now;
    }
    db.insert(
        "ingest_chunks",
        "raw_chunks",
        &batch.chunks,
        INGEST_SETTINGS,
    )
    .await?;
    for row in &mut batch.checkpoints {
        row.version = version;
        row.updated_at = now;
    }
    db.insert(
        "ingest_checkpoints",
        "ingest_checkpoints",
        &batch.checkpoints,
        &[],
    )
    .await
}

/// The events a retraction removes (a session's from line `l` on), as a subquery's text: the
/// postings it removes and the counts it subtracts are those of these documents.
macro_rules! doomed_events {
    () => {
        "SELECT event_key FROM events WHERE session_key = {s:UInt64} AND line_no > {l:UInt32}"
    };
}

/// Removes a session's rows from lines after `after_line`, keeping the index statistics exact:
/// the documents' term and length counts are subtracted before their postings go.
///
/// A run killed part way through is repeated by the next one, and must subtract once: the
/// subtractions carry an insert deduplication token naming the rows they remove (which writes
/// stored them), so a repeat finds its token taken while those rows still exist. Postings go
/// before events, because events are what names the rows.
pub(crate) async fn retract(db: &Db, retraction: &Retraction) -> Result<(), DbError> {
    let Retraction {
        session_key,
        after_line,
        keep_turns,
        archive,
        checkpoint,
    } = *retraction;
    if let Some(file_key) = checkpoint {
        db.delete(
            "retract_checkpoint",
            "ingest_checkpoints",
            "file_key = {f:UInt64}",
        )
        .param("f", file_key)
        .execute(db, db.default_deadline())
        .await?;
    }
    if let Some(doomed) = Doomed::find(db, session_key, after_line).await? {
        doomed.subtract(db, session_key, after_line).await?;
    }
    if db.on_cluster() {
        let docs: Vec<u64> = db
            .read("retract_docs", doomed_events!())
            .param("s", session_key)
            .param("l", after_line)
            .fetch_all(db, db.default_deadline())
            .await?;
        delete_postings(db, "retract_postings", session_key, &docs).await?;
    } else {
        // One statement, whose subquery sees exactly what this server stores.
        db.delete(
            "retract_postings",
            "postings",
            concat!("sess = {s:UInt64} AND doc IN (", doomed_events!(), ")"),
        )
        .param("s", session_key)
        .param("l", after_line)
        .execute(db, db.default_deadline())
        .await?;
    }
    let mut statements: Vec<(&'static str, &str, &str)> = vec![
        (
            "retract_events",
            "events",
            "session_key = {s:UInt64} AND line_no > {l:UInt32}",
        ),
        (
            "retract_turns",
            "turns",
            "session_key = {s:UInt64} AND ordinal > {t:UInt32}",
        ),
    ];
    if after_line == 0 {
        // Nothing of the session stays: its row and its vector go too.
        statements.extend([
            ("retract_session", "sessions", "session_key = {s:UInt64}"),
            (
                "retract_session_vector",
                "session_vectors",
                "sess = {s:UInt64}",
            ),
        ]);
    }
    for (name, table, condition) in statements {
        db.delete(name, table, condition)
            .param("s", session_key)
            .param("l", after_line)
            .param("t", keep_turns)
            .execute(db, db.default_deadline())
            .await?;
    }
    if let Some((file_key, generation)) = archive {
        // The bytes of a replaced log: the new generation's are written with this batch.
        db.delete(
            "retract_archive",
            "raw_chunks",
            "file_key = {f:UInt64} AND generation < {g:UInt32}",
        )
        .param("f", file_key)
        .param("g", generation)
        .execute(db, db.default_deadline())
        .await?;
    }
    Ok(())
}

/// How many documents' postings one statement deletes: their keys travel in the request.
const DOCS_PER_DELETE: usize = 10_000;

/// Deletes the postings of session `session`'s documents `docs`, on a cluster: the documents
/// are named by value, not by a subquery over events (see [`Db::delete`]).
async fn delete_postings(
    db: &Db,
    name: &'static str,
    session: u64,
    docs: &[u64],
) -> Result<(), DbError> {
    for chunk in docs.chunks(DOCS_PER_DELETE) {
        db.delete(
            name,
            "postings",
            "sess = {s:UInt64} AND doc IN {d:Array(UInt64)}",
        )
        .param("s", session)
        .param("d", chunk)
        .execute(db, db.default_deadline())
        .await?;
    }
    Ok(())
}

/// The searchable rows a retraction removes, named by their count and the writes that stored
/// them (no later incarnation of the session has the same name), with their counts per type.
#[derive(Debug)]
struct Doomed {
    docs: u64,
    first_batch: u64,
    last_batch: u64,
    /// What the rows add to `corpus_stats`, per event type.
    corpus: Vec<CorpusStatsRow>,
}

/// The doomed rows of one event type.
#[derive(Debug, serde::Deserialize, clickhouse::Row)]
struct DoomedType {
    event_type: u8,
    docs: i64,
    total_len: i64,
    first_batch: u64,
    last_batch: u64,
}

/// A term's document frequency among the documents of one event type.
#[derive(Debug, serde::Serialize, serde::Deserialize, clickhouse::Row)]
struct TermDfRow {
    term: u64,
    event_type: u8,
    df: i64,
}

/// The documents of one event type and their total length.
#[derive(Debug, serde::Serialize, serde::Deserialize, clickhouse::Row)]
struct CorpusStatsRow {
    event_type: u8,
    docs: i64,
    total_len: i64,
}

impl Doomed {
    async fn find(db: &Db, session_key: u64, after_line: u32) -> Result<Option<Self>, DbError> {
        let types: Vec<DoomedType> = db
            .read(
                "retract_doomed",
                "SELECT toUInt8(event_type) AS event_type, toInt64(count()) AS docs, \
                 toInt64(sum(doc_len)) AS total_len, min(batch) AS first_batch, \
                 max(batch) AS last_batch FROM events \
                 WHERE session_key = {s:UInt64} AND line_no > {l:UInt32} AND searchable \
                 GROUP BY event_type ORDER BY event_type",
            )
            .param("s", session_key)
            .param("l", after_line)
            .fetch_all(db, db.default_deadline())
            .await?;
        if types.is_empty() {
            return Ok(None);
        }
        Ok(Some(Self {
            docs: types.iter().map(|t| t.docs as u64).sum(),
            first_batch: types.iter().map(|t| t.first_batch).min().unwrap_or(0),
            last_batch: types.iter().map(|t| t.last_batch).max().unwrap_or(0),
            corpus: types
                .iter()
                .map(|t| CorpusStatsRow {
                    event_type: t.event_type,
                    docs: -t.docs,
                    total_len: -t.total_len,
                })
                .collect(),
        }))
    }

    /// Subtracts the rows' document frequencies and corpus counts, each exactly once.
    async fn subtract(&self, db: &Db, session_key: u64, after_line: u32) -> Result<(), DbError> {
        let token = format!(
            "retract:{session_key}:{after_line}:{}:{}:{}",
            self.docs, self.first_batch, self.last_batch
        );
        // Sorted, so that a repeat sends the same blocks under the same tokens.
        let mut terms: Vec<TermDfRow> = db
            .read(
                "retract_term_df",
                concat!(
                    "SELECT term, toUInt8(kind % 128) AS event_type, toInt64(count()) AS df \
                     FROM postings WHERE sess = {s:UInt64} AND doc IN (",
                    doomed_events!(),
                    ") GROUP BY term, event_type ORDER BY term, event_type"
                ),
            )
            .param("s", session_key)
            .param("l", after_line)
            .fetch_all(db, db.default_deadline())
            .await?;
        for row in &mut terms {
            row.df = -row.df;
        }
        insert_once(db, "retract_term_df", "term_df", &terms, &token).await?;
        insert_once(
            db,
            "retract_corpus_stats",
            "corpus_stats",
            &self.corpus,
            &token,
        )
        .await
    }
}

/// Inserts `rows` into `table` at most once under `token`: the table's deduplication window
/// drops a repeat of the same insert.
async fn insert_once<T>(
    db: &Db,
    name: &'static str,
    table: &str,
    rows: &[T],
    token: &str,
) -> Result<(), DbError>
where
    T: clickhouse::Row + serde::Serialize + for<'r> clickhouse::Row<Value<'r> = T>,
{
    let token = format!("{token}:{table}");
    db.insert(
        name,
        table,
        rows,
        &[
            ("insert_deduplicate", "1"),
            ("insert_deduplication_token", &token),
        ],
    )
    .await
}

/// Checks the index against the events it indexes, and corrects it: an engine that died inside
/// an insert may have stored some of its views' rows and not others (a view's insert is not
/// atomic with the others'). Postings of events that were not stored go (the events are written
/// again, postings and all, by the next run), then the statistics are made to count what is
/// stored. Says whether anything was corrected. Run only while nothing else writes: it compares
/// totals read one after another.
pub async fn repair_statistics(db: &Db) -> Result<bool, DbError> {
    let deadline = db.default_deadline();
    // An event key is unique within its session only (two sessions can hold an event of the
    // same time and place): a document is its session and its key.
    let orphans: Vec<(u64, u64)> = db
        .read(
            "statistics_orphans",
            "SELECT DISTINCT sess, doc FROM postings \
             WHERE (sess, doc) NOT IN (SELECT session_key, event_key FROM events) ORDER BY sess",
        )
        .fetch_all(db, deadline)
        .await?;
    if !orphans.is_empty() {
        tracing::warn!(
            documents = orphans.len(),
            "dropping postings of events that were not stored"
        );
        if db.on_cluster() {
            for session in orphans.chunk_by(|a, b| a.0 == b.0) {
                let docs: Vec<u64> = session.iter().map(|&(_, doc)| doc).collect();
                delete_postings(db, "statistics_orphans", session[0].0, &docs).await?;
            }
        } else {
            db.delete(
                "statistics_orphans",
                "postings",
                "(sess, doc) NOT IN (SELECT session_key, event_key FROM events)",
            )
            .execute(db, deadline)
            .await?;
        }
    }
    let orphans = !orphans.is_empty();
    let mut corrected = orphans;
    // Per event type: what the events count, less what the statistics hold.
    let corpus: Vec<CorpusStatsRow> = db
        .read(
            "statistics_corpus",
            "SELECT t AS event_type, toInt64(c) - k AS docs, toInt64(l) - kl AS total_len FROM \
             (SELECT toUInt8(event_type) AS t, count() AS c, sum(doc_len) AS l FROM events \
              WHERE searchable GROUP BY t) AS counted \
             FULL OUTER JOIN (SELECT event_type AS t, sum(docs) AS k, sum(total_len) AS kl \
              FROM corpus_stats GROUP BY t) AS kept \
             USING (t) WHERE toInt64(c) != k OR toInt64(l) != kl ORDER BY t",
        )
        .fetch_all(db, deadline)
        .await?;
    if !corpus.is_empty() {
        tracing::warn!(types = corpus.len(), "correcting the corpus statistics");
        db.insert(
            "statistics_corpus",
            "corpus_stats",
            &corpus,
            &[("insert_deduplicate", "0")],
        )
        .await?;
        corrected = true;
    }
    let totals: Option<(i64, i64)> = db
        .read(
            "statistics_totals",
            "SELECT toInt64(ifNull((SELECT count() FROM postings), 0)), \
             toInt64(ifNull((SELECT sum(abs(df)) FROM (SELECT sum(df) AS df FROM term_df \
             GROUP BY term, event_type)), 0))",
        )
        .fetch_optional(db, deadline)
        .await?;
    let (postings, df) = totals.unwrap_or_default();
    // A total of absolute per-(term, type) counts: a count filed under a wrong type shows
    // (in a plain sum it would cancel out).
    if postings != df {
        tracing::warn!(postings, df, "correcting the document frequencies");
        db.write(
            "statistics_term_df",
            "INSERT INTO term_df SELECT term, t, toInt64(p) - d FROM \
             (SELECT term, toUInt8(kind % 128) AS t, count() AS p FROM postings GROUP BY term, t) AS counted \
             FULL OUTER JOIN (SELECT term, event_type AS t, sum(df) AS d FROM term_df GROUP BY term, t) AS kept \
             USING (term, t) WHERE toInt64(p) != d",
        )
        .setting("insert_deduplicate", "0")
        .execute(db, deadline)
        .await?;
        corrected = true;
    }
    Ok(corrected)
}

/// Which of `session_keys` hold two copies of an event: an insert of a killed run that landed
/// after the next run had read the checkpoints it would have moved.
pub async fn stored_twice(db: &Db, session_keys: &[u64]) -> Result<Vec<u64>, DbError> {
    let mut doubled = Vec::new();
    for chunk in session_keys.chunks(10_000) {
        let found: Vec<u64> = db
            .read(
                "ingest_stored_twice",
                "SELECT DISTINCT session_key FROM (SELECT session_key, event_key FROM events \
                 WHERE session_key IN {keys:Array(UInt64)} GROUP BY session_key, event_key \
                 HAVING count() > 1)",
            )
            .param("keys", chunk)
            .fetch_all(db, db.default_deadline())
            .await?;
        doubled.extend(found);
    }
    Ok(doubled)
}

/// A row version newer than `previous`: wall-clock nanoseconds, forced to increase.
pub fn next_version(previous: u64) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    now.max(previous + 1)
}
