//! Ingest: agent session logs → sessions, turns, events and the search index.
//!
//! A blocking reader thread parses files into batches while an async writer inserts the previous
//! batch, so parsing and ClickHouse work overlap. Every run is incremental (checkpoints) and
//! idempotent (re-reading replaces what a file contributed before).

pub(crate) mod archived;
pub mod claim;
pub mod files;
pub mod index_format;
pub mod lock;
pub mod push;
pub mod reader;
pub mod redact;
pub mod reindex;
pub mod session;
pub mod sources;
pub mod writer;

use std::time::{Duration, Instant};

use crate::config::Config;
use crate::db::gate::WhenMigrating;
use crate::db::{Db, DbError};
use files::LogFile;
use reader::{Counters, ReadSettings, Reader, Stored, WriterGone};

/// What a run did.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Files read: a log file, or a store holding many sessions.
    pub files: usize,
    /// Logs read: one per session (a store's sessions each count).
    pub logs: usize,
    pub counters: Counters,
    pub elapsed: Duration,
    /// Bytes not yet ingested when the run started (the run's lag).
    pub pending_bytes: u64,
    /// Sessions found stored twice (a killed run's last insert landed after this run read
    /// its checkpoints) and rebuilt from their logs.
    pub rebuilt: usize,
}

impl Summary {
    /// Adds another run's counts to this one (runs over parts of one corpus, one after
    /// another: their times add up).
    pub fn absorb(&mut self, other: Self) {
        let (c, o) = (&mut self.counters, other.counters);
        c.files_read += o.files_read;
        c.files_unchanged += o.files_unchanged;
        c.files_reread += o.files_reread;
        c.unreadable.extend(o.unreadable);
        c.lines += o.lines;
        c.malformed += o.malformed;
        c.events += o.events;
        c.sessions += o.sessions;
        c.redactions += o.redactions;
        c.bytes += o.bytes;
        c.future_events += o.future_events;
        self.files += other.files;
        self.logs += other.logs;
        self.elapsed += other.elapsed;
        self.pending_bytes += other.pending_bytes;
        self.rebuilt += other.rebuilt;
    }

    pub fn events_per_second(&self) -> f64 {
        self.counters.events as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The summary as one line that says first whether anything was written.
    pub fn headline(&self) -> String {
        if self.counters.events == 0 && self.counters.files_read == 0 {
            format!("nothing new: {self}")
        } else {
            format!("ingested {self}")
        }
    }

    /// True when there were logs but none could be read.
    pub fn nothing_ingested(&self) -> bool {
        self.logs > 0 && self.counters.unreadable.len() >= self.logs
    }

    /// Every file found but not used, and why: `problems` met while finding them (a second
    /// copy of a session is read from the first, so it is not among them), then the files
    /// that could not be read.
    pub fn not_used(&self, problems: &[files::DiscoverError]) -> Vec<String> {
        problems
            .iter()
            .filter(|p| !p.is_duplicate())
            .map(ToString::to_string)
            .chain(self.counters.unreadable.iter().cloned())
            .collect()
    }

    /// The run as the metrics count it.
    pub fn figures(&self) -> crate::metrics::LocalIngestRun {
        let c = &self.counters;
        crate::metrics::LocalIngestRun {
            files_read: c.files_read,
            files_unchanged: c.files_unchanged,
            files_reread: c.files_reread,
            files_unreadable: c.unreadable.len() as u64,
            lines: c.lines,
            malformed: c.malformed,
            events: c.events,
            future_events: c.future_events,
            pending_bytes: self.pending_bytes,
        }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.counters;
        write!(f, "{} files", self.files)?;
        if self.logs != self.files {
            // Stores hold many sessions, each read as a log of its own.
            write!(f, " holding {} sessions", self.logs)?;
        }
        write!(
            f,
            " ({} read, {} unchanged, {} re-read from the start, {} unreadable); \
             {} lines, {} events written, {} sessions touched, {} malformed lines, {} redactions; \
             {:.1} MiB in {:.2} s ({:.0} events/s)",
            c.files_read,
            c.files_unchanged,
            c.files_reread,
            c.unreadable.len(),
            c.lines,
            c.events,
            c.sessions,
            c.malformed,
            c.redactions,
            c.bytes as f64 / (1024.0 * 1024.0),
            self.elapsed.as_secs_f64(),
            self.events_per_second(),
        )?;
        if c.future_events > 0 {
            write!(
                f,
                "; {} events dated in the future, shown at the time they were read \
                 (is the clock of the machine that wrote them right?)",
                c.future_events
            )?;
        }
        if self.rebuilt > 0 {
            write!(
                f,
                "; {} sessions an interrupted run had stored twice rebuilt",
                self.rebuilt
            )?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("writing to clickhouse failed: {0}")]
    Db(#[from] DbError),
    #[error("invalid redaction pattern: {0}")]
    Redaction(#[from] regex::Error),
    #[error("the reader thread failed: {0}")]
    Reader(String),
    #[error("{0}")]
    Archive(String),
    #[error(transparent)]
    Semantic(#[from] crate::semantic::SemanticError),
}

/// How `config` says logs are read.
pub(crate) fn read_settings(config: &Config) -> ReadSettings {
    ReadSettings {
        batch_events: config.ingest.batch_events,
        build: session::BuildSettings {
            preview_chars: config.tools.preview_chars,
            max_indexed_bytes: config.ingest.max_indexed_bytes,
            not_after: crate::text::now_ms() + session::FUTURE_TOLERANCE_MS,
            embedder: crate::semantic::loaded(&config.semantic),
        },
        max_line_bytes: config.ingest.max_line_bytes,
        archive: config.ingest.archive_local,
    }
}

/// Ingests `files` into the database behind `db`, after any other run into it from this
/// machine has finished.
pub async fn run(
    config: &Config,
    db: &Db,
    files: Vec<LogFile>,
    show_progress: bool,
) -> Result<Summary, IngestError> {
    // Before anything is read: turns read without the model would have no vector.
    crate::semantic::ensure(&config.semantic).await?;
    let db = &db.for_writes();
    let lock = lock::IngestLock::acquire(config).await;
    let outcome = async {
        // The last run died while writing: its inserts may be half stored. Settled before
        // this run reads checkpoints, since it writes again what the checkpoints do not cover.
        if let Some(lock) = &lock
            && lock.failed_write_noted()
        {
            repair(db, lock).await?;
        }
        run_locked(config, db, files, show_progress).await
    }
    .await;
    if let (Some(lock), Err(IngestError::Db(_))) = (&lock, &outcome) {
        lock.note_failed_write();
    }
    db.release_writes().await;
    outcome
}

/// Settles the statistics of a run that died while writing, then clears its note.
pub(crate) async fn repair(db: &Db, lock: &lock::IngestLock) -> Result<(), DbError> {
    let _permit = db.enter_write(WhenMigrating::Wait).await?;
    writer::repair_statistics(db).await?;
    lock.clear_failed_write();
    Ok(())
}

async fn run_locked(
    config: &Config,
    db: &Db,
    mut files: Vec<LogFile>,
    show_progress: bool,
) -> Result<Summary, IngestError> {
    let started = Instant::now();
    // Discovery told this machine's logs apart; another source's sessions stay theirs.
    claim::claim(db, &mut files, None).await?;
    let stored = writer::load_stored(db, &files, writer::Doubles::Look).await?;
    let none = Stored::default();
    let stored_for = |file: &LogFile| stored.get(&file.file_key).unwrap_or(&none);
    // A session found stored twice is read whole again; the others from their checkpoints.
    let pending = |file: &LogFile| match stored_for(file) {
        s if s.doubled => file.size,
        s => Reader::pending_bytes(file, s),
    };
    let total: u64 = files.iter().map(pending).sum();
    let touched: Vec<u64> = files
        .iter()
        .filter(|f| pending(f) > 0)
        .map(|f| f.session_key)
        .collect();
    let doubled = files.iter().filter(|f| stored_for(f).doubled).count();
    let progress = progress_bar(total, show_progress);
    let log_count = files.len();
    let file_count = files
        .iter()
        .map(|f| crate::harness::backing_store(&f.path))
        .collect::<std::collections::HashSet<_>>()
        .len();
    let (files, counters) = pipeline(config, db, &progress, move |reader| {
        for file in &files {
            let stored = stored.get(&file.file_key).cloned().unwrap_or_default();
            if stored.doubled {
                reader.reread_file(file, &stored)?;
            } else {
                reader.read_file(file, &stored)?;
            }
        }
        Ok(files)
    })
    .await?;
    // A killed run's late insert may also land while this run reads: its sessions are among
    // those this run wrote.
    let rebuilt = doubled + rebuild_doubled(config, db, files, &touched).await?;
    Ok(Summary {
        files: file_count,
        logs: log_count,
        counters,
        elapsed: started.elapsed(),
        pending_bytes: total,
        rebuilt,
    })
}

/// Rebuilds from their logs the sessions among `touched` that hold an event twice, and says
/// how many there were. Retractions make this exact: each copy's statistics go with it.
async fn rebuild_doubled(
    config: &Config,
    db: &Db,
    files: Vec<LogFile>,
    touched: &[u64],
) -> Result<usize, IngestError> {
    let doubled: std::collections::HashSet<u64> = writer::stored_twice(db, touched)
        .await?
        .into_iter()
        .collect();
    if doubled.is_empty() {
        return Ok(0);
    }
    tracing::warn!(
        sessions = doubled.len(),
        "rebuilding sessions an interrupted run stored twice"
    );
    let files: Vec<LogFile> = files
        .into_iter()
        .filter(|f| doubled.contains(&f.session_key))
        .collect();
    let stored = writer::load_stored(db, &files, writer::Doubles::Skip).await?;
    let hidden = indicatif::ProgressBar::hidden();
    pipeline(config, db, &hidden, move |reader| {
        for file in &files {
            let stored = stored.get(&file.file_key).cloned().unwrap_or_default();
            reader.reread_file(file, &stored)?;
        }
        Ok(())
    })
    .await?;
    Ok(doubled.len())
}

/// A progress bar over `total` bytes, or a hidden one.
pub(crate) fn progress_bar(total: u64, show: bool) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, {eta})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar
}

/// Runs `read` on a blocking thread with a reader whose batches an async writer inserts while
/// the next batch is parsed (two batches in flight), and returns the reader's counts.
async fn pipeline<F, T>(
    config: &Config,
    db: &Db,
    progress: &indicatif::ProgressBar,
    read: F,
) -> Result<(T, Counters), IngestError>
where
    F: FnOnce(&mut Reader<'_>) -> Result<T, WriterGone> + Send + 'static,
    T: Send + 'static,
{
    let redactor = redact::Redactor::new(&config.ingest.redaction)?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<reader::Batch>(1);
    let writer_db = db.clone();
    let writer = tokio::spawn(async move {
        let mut version = 0;
        while let Some(batch) = rx.recv().await {
            version = writer::next_version(version);
            writer::write_batch(&writer_db, batch, version, WhenMigrating::Wait).await?;
        }
        Ok::<(), DbError>(())
    });
    let settings = read_settings(config);
    let self_names = config.tools.self_server_names.clone();
    let bar = progress.clone();
    let reading = tokio::task::spawn_blocking(move || {
        let self_tools = crate::harness::draft::SelfTools::new(&self_names);
        let sink: reader::Sink<'_> =
            Box::new(|batch| tx.blocking_send(batch).map_err(|_| WriterGone));
        let mut reader = Reader::new(settings, &redactor, &self_tools, sink, &bar);
        let value = read(&mut reader)?;
        reader.finish().map(|counters| (value, counters))
    });
    let read_result = reading
        .await
        .map_err(|e| IngestError::Reader(e.to_string()))?;
    let write_result = writer
        .await
        .map_err(|e| IngestError::Reader(e.to_string()))?;
    progress.finish_and_clear();
    write_result?;
    read_result.map_err(|e| IngestError::Reader(e.to_string()))
}
