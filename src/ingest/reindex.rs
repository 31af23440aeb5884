//! `moraine-mcp reindex`: rebuilds sessions, turns, events and the index from the logs this
//! service holds, after an adapter fix. A log is re-read from its archived bytes (every pushed
//! log, and local ones with `ingest.archive_local`), else from its file when it is still on
//! disk; its earlier rows are retracted first, and the same bytes give the same IDs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::archived;
use super::files::{self, Origin};
use super::reader::{DiskLog, Resume, Stored};
use super::{IngestError, pipeline, progress_bar, reader::Counters};
use crate::config::Config;
use crate::db::gate::WhenMigrating;
use crate::db::{Db, DbError};
use crate::rows::CheckpointRow;
use crate::vocab::Harness;

/// Archived bytes are copied out in pieces of at most this many bytes.
const COPY_PIECE: u64 = 32 * 1024 * 1024;

/// What a reindex did.
#[derive(Debug, Clone)]
pub struct ReindexSummary {
    pub logs: usize,
    pub from_archive: usize,
    pub from_disk: usize,
    /// Logs neither archived nor on disk any more: left as they are.
    pub missing: Vec<String>,
    /// Whether this run rebuilt the whole index with this build's tokenizer (every log, none
    /// missing), so the store now records its format.
    pub index_current: bool,
    pub counters: Counters,
    pub elapsed: Duration,
}

impl std::fmt::Display for ReindexSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.counters;
        write!(
            f,
            "{} logs ({} from the archive, {} from disk, {} missing and left as they were); \
             {} lines, {} events written, {} sessions, {} malformed lines, {} redactions; in {:.2} s",
            self.logs,
            self.from_archive,
            self.from_disk,
            self.missing.len(),
            c.lines,
            c.events,
            c.sessions,
            c.malformed,
            c.redactions,
            self.elapsed.as_secs_f64(),
        )
    }
}

/// Which logs to rebuild.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub harness: Option<Harness>,
    pub source: Option<String>,
    /// Only the logs of these sessions (empty: every session).
    pub sessions: Vec<u64>,
}

/// Rebuilds the selected logs. `scratch` is where archived logs are copied to be read.
pub async fn run(
    config: &Config,
    db: &Db,
    selection: &Selection,
    scratch: &Path,
    show_progress: bool,
) -> Result<ReindexSummary, IngestError> {
    crate::semantic::ensure(&config.semantic).await?;
    let db = &db.for_writes();
    let started = Instant::now();
    let checkpoints = checkpoints(db, selection).await?;
    std::fs::create_dir_all(scratch)
        .map_err(|e| IngestError::Reader(format!("cannot create {}: {e}", scratch.display())))?;
    let mut jobs = Vec::new();
    let mut missing = Vec::new();
    let (mut from_archive, mut from_disk) = (0, 0);
    for (i, checkpoint) in checkpoints.iter().enumerate() {
        let Some(harness) = Harness::parse(&checkpoint.harness) else {
            missing.push(checkpoint.path.clone());
            continue;
        };
        let origin = if checkpoint.origin == "push" {
            Origin::Push
        } else {
            Origin::Local
        };
        let copy = scratch.join(format!("{i}.log"));
        let read_from = if archived_whole(db, checkpoint).await? {
            copy_archive(db, checkpoint, &copy).await?;
            from_archive += 1;
            Source::Archive(copy)
        } else if origin == Origin::Local
            && crate::harness::backing_file(Path::new(&checkpoint.path)).is_file()
        {
            from_disk += 1;
            Source::Disk(PathBuf::from(&checkpoint.path))
        } else {
            missing.push(checkpoint.path.clone());
            continue;
        };
        let size = read_from.size();
        let path = Path::new(&checkpoint.path);
        // An archive holds the log as read (rendered already); a log on disk is rendered again.
        let render_as = matches!(read_from, Source::Disk(_)).then_some(harness);
        let identity = crate::harness::Identity::of(harness, path, || {
            files::read_head(read_from.path(), render_as)
        });
        let file = files::describe_log(path, harness, &checkpoint.source, origin, size, identity)
            .map_err(|e| IngestError::Reader(e.to_string()))?;
        jobs.push((file, checkpoint.clone(), read_from));
    }
    // Each log is rebuilt into the session it was written to (apart from another source's, or
    // under its parent's), never one its name alone would give.
    let mut logs: Vec<files::LogFile> = jobs.iter().map(|(file, _, _)| file.clone()).collect();
    super::claim::claim(db, &mut logs, None).await?;
    for ((file, _, _), claimed) in jobs.iter_mut().zip(logs) {
        *file = claimed;
    }
    // A session that two logs of one source were written to (a log and its renamed copy)
    // holds what the last of them wrote: that one alone rebuilds it.
    let mut last_writer: std::collections::HashMap<u64, (i64, u64)> = Default::default();
    for (file, checkpoint, _) in &jobs {
        let wrote = (checkpoint.updated_at, checkpoint.file_key);
        let last = last_writer.entry(file.session_key).or_insert(wrote);
        *last = (*last).max(wrote);
    }
    jobs.retain(|(file, checkpoint, _)| {
        last_writer.get(&file.session_key) == Some(&(checkpoint.updated_at, checkpoint.file_key))
    });
    let total = jobs.iter().map(|(file, _, _)| file.size).sum();
    let progress = progress_bar(total, show_progress);
    let logs = checkpoints.len();
    let ((), counters) = pipeline(config, db, &progress, move |reader| {
        for (file, checkpoint, read_from) in &jobs {
            let log = match read_from {
                Source::Archive(path) => DiskLog::archive_copy(path),
                Source::Disk(path) => DiskLog::open(path, file.harness),
            };
            let log = match log {
                Ok(log) => log,
                Err(error) => {
                    tracing::warn!(path = %checkpoint.path, %error, "cannot read a log to reindex; skipping it");
                    continue;
                }
            };
            let stored = Stored {
                checkpoint: Some(checkpoint.clone()),
                max_line: None,
                doubled: false,
            };
            let resume = Resume::again(file, checkpoint);
            if let Err(error) = reader.read_log(file, &log, resume, &stored) {
                match error {
                    super::reader::ReadError::WriterGone => return Err(super::WriterGone),
                    super::reader::ReadError::Io(error) => {
                        tracing::warn!(path = %checkpoint.path, %error, "cannot read a log to reindex; skipping it");
                    }
                }
            }
            if let Source::Archive(path) = read_from {
                let _ = std::fs::remove_file(path);
            }
        }
        Ok(())
    })
    .await?;
    // Sessions rebuilt from their logs are exact; statistics an earlier cut write left
    // wrong (a view's rows of an insert the engine dropped) are made to count them too.
    // Only a rebuild of every log makes the whole index this tokenizer's.
    let everything = selection.harness.is_none()
        && selection.source.is_none()
        && selection.sessions.is_empty()
        && missing.is_empty();
    {
        let _permit = db.enter_write(WhenMigrating::Wait).await?;
        super::writer::repair_statistics(db).await?;
        if everything {
            super::index_format::record(db, super::index_format::written(config)).await?;
        }
    }
    Ok(ReindexSummary {
        logs,
        from_archive,
        from_disk,
        missing,
        index_current: everything,
        counters,
        elapsed: started.elapsed(),
    })
}

/// Where a log is re-read from.
enum Source {
    /// A copy of its archived bytes.
    Archive(PathBuf),
    /// Its file, still on this machine.
    Disk(PathBuf),
}

impl Source {
    fn path(&self) -> &Path {
        match self {
            Self::Archive(path) | Self::Disk(path) => path,
        }
    }

    fn size(&self) -> u64 {
        std::fs::metadata(self.path()).map_or(0, |m| m.len())
    }
}

async fn checkpoints(db: &Db, selection: &Selection) -> Result<Vec<CheckpointRow>, DbError> {
    db.read(
        "reindex_checkpoints",
        "SELECT ?fields FROM ingest_checkpoints FINAL \
         WHERE ({harness:String} = '' OR harness = {harness:String}) \
           AND ({source:String} = '' OR source = {source:String}) \
           AND (empty({sessions:Array(UInt64)}) OR session_key IN {sessions:Array(UInt64)}) \
         ORDER BY source, path",
    )
    .param("harness", selection.harness.map_or("", Harness::as_str))
    .param("source", selection.source.as_deref().unwrap_or(""))
    .param("sessions", &selection.sessions)
    .fetch_all(db, db.default_deadline())
    .await
}

/// Whether the archive holds every byte the checkpoint says was received.
async fn archived_whole(db: &Db, checkpoint: &CheckpointRow) -> Result<bool, DbError> {
    let stored: Option<u64> = db
        .read(
            "reindex_archived",
            "SELECT sum(length(data)) FROM raw_chunks FINAL \
             WHERE file_key = {f:UInt64} AND generation = {g:UInt32}",
        )
        .param("f", checkpoint.file_key)
        .param("g", checkpoint.generation)
        .fetch_optional(db, db.default_deadline())
        .await?;
    Ok(checkpoint.received > 0 && stored == Some(checkpoint.received))
}

/// Copies a log's archived bytes to `path`, a piece at a time.
async fn copy_archive(db: &Db, checkpoint: &CheckpointRow, path: &Path) -> Result<(), IngestError> {
    use std::io::Write as _;
    let failed = |e: std::io::Error| IngestError::Reader(format!("{}: {e}", path.display()));
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(failed)?);
    let mut at = 0;
    while at < checkpoint.received {
        let to = (at + COPY_PIECE).min(checkpoint.received);
        let piece = archived::read(db, checkpoint.file_key, checkpoint.generation, at, to).await?;
        out.write_all(&piece).map_err(failed)?;
        at = to;
    }
    out.flush().map_err(failed)
}
