//! Writing batches to ClickHouse: retractions first, then events (which the materialized views
//! index in the same insert), turns, sessions, archived bytes, and last the checkpoints that
//! cover them.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use super::files::LogFile;
use super::reader::{Batch, Retraction, Stored};
use crate::db::{Db, DbError};
use crate::rows::CheckpointRow;

/// Settings for the event insert: the index views run in parallel with the events view.
/// Ingest is background work: its engine threads yield to searches when the CPU is short
/// (ClickHouse applies the nice value only with CAP_SYS_NICE, and ignores it otherwise).
const INGEST_SETTINGS: &[(&str, &str)] = &[("os_thread_priority", "10")];
const EVENT_INSERT_SETTINGS: &[(&str, &str)] = &[
    ("parallel_view_processing", "1"),
    ("os_thread_priority", "10"),
];

/// What ClickHouse already holds for each of `files`, by file key.
pub async fn load_stored(db: &Db, files: &[LogFile]) -> Result<HashMap<u64, Stored>, DbError> {
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
        let lines: HashMap<u64, u32> = db
            .read(
                "ingest_max_lines",
                "SELECT session_key, max(line_no) FROM events WHERE session_key IN {keys:Array(UInt64)} GROUP BY session_key",
            )
            .param("keys", &session_keys)
            .fetch_all::<(u64, u32)>(db, deadline)
            .await?
            .into_iter()
            .collect();
        let mut by_key: HashMap<u64, CheckpointRow> =
            checkpoints.into_iter().map(|c| (c.file_key, c)).collect();
        for file in chunk {
            stored.insert(
                file.file_key,
                Stored {
                    checkpoint: by_key.remove(&file.file_key),
                    max_line: lines.get(&file.session_key).copied(),
                },
            );
        }
    }
    Ok(stored)
}

/// Writes one batch. Every row gets the same version, newer than any written before.
pub async fn write_batch(db: &Db, mut batch: Batch, version: u64) -> Result<(), DbError> {
    for retraction in &batch.retractions {
        tracing::info!(
            session_key = retraction.session_key,
            after_line = retraction.after_line,
            "removing rows before re-reading"
        );
        retract(db, retraction).await?;
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

/// Removes a session's rows from lines after `after_line`, keeping the index statistics exact:
/// the documents' term and length counts are subtracted before their postings go.
///
/// Statements run in an order that a crash can only interrupt harmlessly until the statistics
/// are adjusted; the postings delete follows immediately after.
pub(crate) async fn retract(db: &Db, retraction: &Retraction) -> Result<(), DbError> {
    let Retraction {
        session_key,
        after_line,
        keep_turns,
        archive,
    } = *retraction;
    let doomed =
        "SELECT event_key FROM events WHERE session_key = {s:UInt64} AND line_no > {l:UInt32}";
    let statements: Vec<(&'static str, String)> = vec![
        (
            "retract_term_df",
            format!(
                "INSERT INTO term_df SELECT term, -toInt64(count()) FROM postings \
                 WHERE sess = {{s:UInt64}} AND doc IN ({doomed}) GROUP BY term"
            ),
        ),
        (
            "retract_corpus_stats",
            "INSERT INTO corpus_stats SELECT 0, -toInt64(count()), -toInt64(sum(doc_len)) FROM events \
             WHERE session_key = {s:UInt64} AND line_no > {l:UInt32} AND searchable"
                .to_owned(),
        ),
        (
            "retract_postings",
            format!("DELETE FROM postings WHERE sess = {{s:UInt64}} AND doc IN ({doomed})"),
        ),
        (
            "retract_events",
            "DELETE FROM events WHERE session_key = {s:UInt64} AND line_no > {l:UInt32}".to_owned(),
        ),
        (
            "retract_turns",
            "DELETE FROM turns WHERE session_key = {s:UInt64} AND ordinal > {t:UInt32}".to_owned(),
        ),
    ];
    for (name, sql) in statements {
        db.write(name, &sql)
            .param("s", session_key)
            .param("l", after_line)
            .param("t", keep_turns)
            .execute(db, db.default_deadline())
            .await?;
    }
    if after_line == 0 {
        db.write(
            "retract_session",
            "DELETE FROM sessions WHERE session_key = {s:UInt64}",
        )
        .param("s", session_key)
        .execute(db, db.default_deadline())
        .await?;
    }
    if let Some((file_key, generation)) = archive {
        // The bytes of a replaced log: the new generation's are written with this batch.
        db.write(
            "retract_archive",
            "DELETE FROM raw_chunks WHERE file_key = {f:UInt64} AND generation < {g:UInt32}",
        )
        .param("f", file_key)
        .param("g", generation)
        .execute(db, db.default_deadline())
        .await?;
    }
    Ok(())
}

/// A row version newer than `previous`: wall-clock nanoseconds, forced to increase.
pub fn next_version(previous: u64) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    now.max(previous + 1)
}
