//! `moraine-mcp forget`: removes what is stored — the demo sessions, one session, a source's
//! sessions, or everything — keeping the search statistics exact.
//!
//! A session goes the way a re-read log's rows go (its events, postings, turns and its share
//! of the BM25 statistics), then its logs' checkpoints and archived bytes, so nothing of it is
//! left to find. Logs still on disk in a configured source come back at the next ingest.

use crate::config::Config;
use crate::db::gate::WhenMigrating;
use crate::db::{Db, DbError};
use crate::ids::Id;
use crate::ingest::reader::Retraction;
use crate::ingest::writer;

/// What to remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forget {
    /// Every session of a source (`demo` for the bundled demo sessions).
    Source(String),
    /// One session, by its `session:` ID.
    Session(String),
    /// The whole database.
    Everything,
}

/// What was removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Forgotten {
    pub sessions: usize,
    pub logs: usize,
    /// The whole database was dropped.
    pub everything: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ForgetError {
    #[error(
        "{0} is not a session ID (use one that search_sessions, list_sessions or open returned)"
    )]
    NotASessionId(String),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("cannot drop the database: {0}")]
    Drop(#[from] clickhouse::error::Error),
    #[error("cannot record that the demo was removed: {0}")]
    Dismiss(std::io::Error),
}

/// How many sessions and events the store holds (of `source`, when given).
pub async fn count(db: &Db, source: Option<&str>) -> Result<(u64, u64), DbError> {
    let counted: Option<(u64, u64)> = db
        .read(
            "forget_count",
            "SELECT count(), sum(event_count) FROM sessions FINAL \
             WHERE {source:String} = '' OR source = {source:String}",
        )
        .param("source", source.unwrap_or(""))
        .fetch_optional(db, db.default_deadline())
        .await?;
    Ok(counted.unwrap_or_default())
}

/// Removes `what` from the store behind `db`. Removing the demo also keeps `up` from loading
/// it again.
pub async fn run(config: &Config, db: &Db, what: &Forget) -> Result<Forgotten, ForgetError> {
    let db = &db.for_writes();
    if *what == Forget::Source(crate::demo::SOURCE.into()) {
        crate::demo::dismiss(&config.embedded.data_dir_path()).map_err(ForgetError::Dismiss)?;
    }
    let sessions: Vec<u64> = match what {
        Forget::Everything => {
            crate::db::drop_database(&config.clickhouse).await?;
            return Ok(Forgotten {
                everything: true,
                ..Forgotten::default()
            });
        }
        Forget::Session(id) => match Id::parse(id) {
            Ok(Id::Session { session }) => vec![session],
            _ => return Err(ForgetError::NotASessionId(id.clone())),
        },
        Forget::Source(source) => {
            db.read(
                "forget_source_sessions",
                "SELECT DISTINCT session_key FROM ( \
                     SELECT session_key FROM sessions FINAL WHERE source = {s:String} \
                     UNION ALL \
                     SELECT session_key FROM ingest_checkpoints FINAL WHERE source = {s:String})",
            )
            .param("s", source)
            .fetch_all(db, db.default_deadline())
            .await?
        }
    };
    // Deletes in a table a migration is copying would be undone by the copy.
    let _permit = db.enter_write(WhenMigrating::Wait).await?;
    let logs: Vec<u64> = db
        .read(
            "forget_logs",
            "SELECT file_key FROM ingest_checkpoints FINAL WHERE session_key IN {k:Array(UInt64)}",
        )
        .param("k", &sessions)
        .fetch_all(db, db.default_deadline())
        .await?;
    let mut removed = 0;
    for &session in &sessions {
        let stored: u64 = db
            .read(
                "forget_exists",
                "SELECT count() FROM sessions FINAL WHERE session_key = {s:UInt64}",
            )
            .param("s", session)
            .fetch_optional(db, db.default_deadline())
            .await?
            .unwrap_or(0);
        writer::retract(db, &Retraction::session(session)).await?;
        removed += usize::from(stored > 0);
    }
    // The logs' bytes, then their checkpoints: a crash in between leaves a log that is read
    // again from the start, never a checkpoint pointing at bytes that are gone.
    for (name, table) in [
        ("forget_archive", "raw_chunks"),
        ("forget_checkpoints", "ingest_checkpoints"),
    ] {
        db.delete(name, table, "file_key IN {f:Array(UInt64)}")
            .param("f", &logs)
            .execute(db, db.default_deadline())
            .await?;
    }
    Ok(Forgotten {
        sessions: removed,
        logs: logs.len(),
        everything: false,
    })
}
