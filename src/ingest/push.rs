//! Logs pushed over the ingest API: where each stands, and appending received bytes.
//!
//! A pushed log is archived as it arrives and parsed with the same adapters, session builder
//! and writer as a local one, so it gets the same IDs, turns, completion and redaction. One
//! request is one batch: its rows, its archived bytes and its checkpoint are written together
//! (the checkpoint last), so a request that fails moves nothing; a resent range is recognised
//! by comparing it with the archive.

mod archive;
pub mod batch;
pub mod contract;

pub use contract::{Appended, LogName, LogStatus, MAX_PATH_BYTES, MAX_STATUS_FILES};

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;

use super::files::{self, LogFile, Origin};
use super::reader::{
    Batch, Counters, FINGERPRINT_BYTES, LogBytes as _, ReadError, ReadSettings, Reader,
    ReceivedLog, Resume, Retraction, Stored,
};
use super::redact::Redactor;
use super::{IngestError, read_settings, writer};
use crate::config::Config;
use crate::db::gate::WhenMigrating;
use crate::db::{Db, DbError};
use crate::harness::draft::SelfTools;
use crate::rows::{CheckpointRow, RawChunkRow};
use crate::vocab::Harness;

/// Why an append was refused.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error("{0}")]
    Invalid(String),
    #[error("the log has {received} bytes here; send from there")]
    OffsetMismatch { received: u64, generation: u32 },
    #[error(
        "the bytes sent differ from those stored at the same offset; the log was replaced: send it from 0 with replace=true"
    )]
    ContentMismatch { received: u64, generation: u32 },
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("the stored log could not be read: {0}")]
    Internal(String),
}

impl From<IngestError> for AppendError {
    fn from(error: IngestError) -> Self {
        match error {
            IngestError::Db(e) => Self::Db(e),
            other => Self::Internal(other.to_string()),
        }
    }
}

/// What appending needs, shared by every request.
pub struct PushIngest {
    db: Db,
    config: Arc<Config>,
    redactor: Arc<Redactor>,
    /// Masks credentials in the archive (built-in rules only, as `push` clients do).
    masker: Arc<Redactor>,
    self_tools: Arc<SelfTools>,
    /// One append at a time per log.
    locks: Locks,
    /// One request at a time per session a log names (its claim, then its write).
    session_locks: Locks,
    /// Row versions must grow across requests.
    version: Mutex<u64>,
    /// Held shared by every write, exclusively by the repair after a write was cut short
    /// (which must not see an insert half done).
    writing: Arc<tokio::sync::RwLock<()>>,
    /// Sessions of writes cut short since the last repair: they may hold an event twice (an
    /// insert that landed, its checkpoint not, and the request sent again).
    cut: Arc<Mutex<Vec<u64>>>,
}

/// Locks by key, kept while someone holds them.
type Locks = Mutex<HashMap<u64, Weak<tokio::sync::Mutex<()>>>>;

/// One log's bytes in an append request.
#[derive(Debug)]
pub struct Append<'a> {
    pub log: LogName,
    pub offset: u64,
    /// The log was replaced: forget what is stored and start over from these bytes.
    pub replace: bool,
    pub bytes: &'a [u8],
}

/// What an append request does for each of its logs: appended, or refused for that log alone
/// (an [`AppendError::refuses_one_log`] error).
pub type Outcomes = Vec<Result<Appended, AppendError>>;

impl AppendError {
    /// The error concerns one log of a request, not the request: the others go ahead.
    pub fn refuses_one_log(&self) -> bool {
        matches!(
            self,
            Self::Invalid(_) | Self::OffsetMismatch { .. } | Self::ContentMismatch { .. }
        )
    }
}

impl PushIngest {
    /// The store it writes to.
    pub(crate) fn db(&self) -> &Db {
        &self.db
    }

    pub fn new(db: Db, config: Arc<Config>) -> Result<Self, IngestError> {
        Ok(Self {
            redactor: Arc::new(Redactor::new(&config.ingest.redaction)?),
            masker: Arc::new(Redactor::builtin()),
            self_tools: Arc::new(SelfTools::new(&config.tools.self_server_names)),
            db: db.for_writes(),
            config,
            locks: Locks::default(),
            session_locks: Locks::default(),
            version: Mutex::new(0),
            writing: Arc::new(tokio::sync::RwLock::new(())),
            cut: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// Where each of `logs` of `source` stands.
    pub async fn status(
        &self,
        source: &str,
        logs: &[LogName],
    ) -> Result<Vec<LogStatus>, AppendError> {
        // Only the logs' keys matter here, and they do not depend on the session inside.
        let files = logs
            .iter()
            .map(|log| describe(source, log, &[]))
            .collect::<Result<Vec<_>, _>>()?;
        let stored = writer::load_stored(&self.db, &files, writer::Doubles::Skip).await?;
        Ok(logs
            .iter()
            .zip(&files)
            .map(|(log, file)| {
                let checkpoint = stored
                    .get(&file.file_key)
                    .and_then(|s| s.checkpoint.as_ref());
                status_of(log, checkpoint)
            })
            .collect())
    }

    /// Appends bytes to several logs as one batch: what is new in each is parsed, and all of
    /// it is written together (checkpoints last), so a request that fails moves no log. A log
    /// refused on its own (bad name, wrong offset, other bytes) leaves the others going ahead;
    /// an error of the store fails the whole request.
    pub async fn append_all(
        &self,
        source: &str,
        body: &bytes::Bytes,
        appends: &[Append<'_>],
    ) -> Result<Outcomes, AppendError> {
        self.repair_if_cut().await?;
        let masked = self.mask_all(body, appends).await?;
        let mut files = describe_all(source, appends);
        let held = self.lock_all(&files).await;
        self.identify_continued(source, appends, &mut files).await?;
        // Sessions belong to the source that stored them first (see `claim`): settled with
        // the logs' own first bytes where the request holds them, one request at a time per
        // session (two logs naming one session, sent at once, would both find it free).
        let mut sessions: Vec<u64> = files
            .iter()
            .filter_map(|f| f.as_ref().ok().map(|f| f.session_key))
            .collect();
        sessions.sort_unstable();
        sessions.dedup();
        let held_sessions = self.lock_keys(&self.session_locks, sessions).await;
        let (mut valid, heads): (Vec<LogFile>, Vec<&[u8]>) = appends
            .iter()
            .zip(&files)
            .filter_map(|(append, file)| {
                let head = if append.offset == 0 {
                    append.bytes
                } else {
                    &[][..]
                };
                file.as_ref().ok().map(|f| (f.clone(), head))
            })
            .unzip();
        super::claim::claim(&self.db, &mut valid, Some(&heads)).await?;
        let mut claimed = valid.iter();
        for file in files.iter_mut().filter_map(|f| f.as_mut().ok()) {
            *file = claimed.next().expect("one claim per log").clone();
        }
        // Writes run to their end under the logs' locks: in a running server no insert of a
        // request lands after the next one has read, so sessions are not looked at for events
        // held twice (per request, that pass would cost more than the append; a server killed
        // inside an insert can leave one, which `moraine-mcp reindex` rebuilds).
        let mut stored = writer::load_stored(&self.db, &valid, writer::Doubles::Skip).await?;
        // Every log is planned against the archive ranges it needs, read for all of them at
        // once: a round of planning, one read of what the round asked for, and again.
        let mut outcomes: Vec<Option<Result<Appended, AppendError>>> = Vec::new();
        let mut work = Vec::new();
        let mut pending = Vec::new();
        for ((append, file), masked) in appends.iter().zip(files).zip(masked) {
            match file {
                Ok(file) => {
                    let stored = stored.remove(&file.file_key).unwrap_or_default();
                    // Pieces of the body, shared by what is parsed, fingerprinted and archived.
                    let sent = Sent {
                        raw: body.slice_ref(append.bytes),
                        masked: masked.map_or_else(|| body.slice_ref(append.bytes), Bytes::from),
                    };
                    pending.push((outcomes.len(), append, file, stored, sent));
                    outcomes.push(None);
                }
                Err(refused) => outcomes.push(Some(Err(refused))),
            }
        }
        let mut archive = archive::Archive::default();
        while !pending.is_empty() {
            let mut wanted = Vec::new();
            let mut waiting = Vec::new();
            for (slot, append, file, stored, sent) in pending {
                match self.plan(&file, &stored, append, &sent, &archive) {
                    Ok(Step::Ready(Some(plan))) => work.push((slot, file, stored, *plan)),
                    Ok(Step::Ready(None)) => {
                        let status = status_of(&append.log, stored.checkpoint.as_ref());
                        outcomes[slot] = Some(Ok(Appended {
                            received: status.received,
                            parsed: status.parsed,
                            generation: status.generation,
                            duplicate: true,
                            ..Appended::default()
                        }));
                    }
                    Ok(Step::Read(ranges)) => {
                        wanted.extend(ranges);
                        waiting.push((slot, append, file, stored, sent));
                    }
                    Err(refused) if refused.refuses_one_log() => {
                        outcomes[slot] = Some(Err(refused));
                    }
                    Err(failed) => return Err(failed),
                }
            }
            archive.fetch(&self.db, &wanted).await?;
            pending = waiting;
        }
        if !work.is_empty() {
            let slots: Vec<usize> = work.iter().map(|(slot, ..)| *slot).collect();
            let work = work
                .into_iter()
                .map(|(_, file, stored, plan)| (file, stored, plan));
            let (batch, appended) = self.parse(work.collect()).await?;
            let version = {
                let mut last = self.version.lock().expect("version lock");
                *last = writer::next_version(*last);
                *last
            };
            // The write runs to its end even when the client goes away meanwhile (the
            // request's future is then dropped): cut between statements, it would leave rows
            // without their checkpoint, or an insert landing after the next request has read
            // the checkpoints. The logs' locks stay held until it ends.
            let db = self.db.clone();
            let writing = self.writing.clone().read_owned().await;
            let config = self.config.clone();
            let cut = self.cut.clone();
            let sessions: Vec<u64> = batch.sessions.iter().map(|s| s.session_key).collect();
            tokio::spawn(async move {
                let written = writer::write_batch(&db, batch, version, WhenMigrating::Refuse).await;
                // An insert the engine dropped part way may have stored some of its index
                // views and not others: the next request repairs before it writes.
                if matches!(&written, Err(e) if !matches!(e, DbError::Migrating | DbError::Busy)) {
                    super::lock::note_failed_write_of(&config);
                    let mut cut = cut.lock().expect("cut sessions");
                    if cut.len() < 100_000 {
                        cut.extend(sessions);
                    }
                }
                drop((held, held_sessions, writing));
                written
            })
            .await
            .map_err(|e| AppendError::Internal(e.to_string()))??;
            for (slot, appended) in slots.into_iter().zip(appended) {
                outcomes[slot] = Some(Ok(appended));
            }
        }
        Ok(outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(|| Err(AppendError::Internal("no outcome".into()))))
            .collect())
    }

    /// A log whose name does not say its session, continued from an offset past its start:
    /// its identity comes from the head of what is archived of it, as when it began.
    async fn identify_continued(
        &self,
        source: &str,
        appends: &[Append<'_>],
        files: &mut [Result<LogFile, AppendError>],
    ) -> Result<(), AppendError> {
        for (append, file) in appends.iter().zip(files.iter_mut()) {
            let Ok(described) = file else { continue };
            if append.offset == 0
                || append.replace
                || crate::harness::Identity::from_name(described.harness, &described.path).is_some()
            {
                continue;
            }
            let stored: Option<(u32, u64)> = self
                .db
                .read(
                    "ingest_received",
                    "SELECT generation, received FROM ingest_checkpoints FINAL \
                     WHERE file_key = {f:UInt64}",
                )
                .param("f", described.file_key)
                .fetch_optional(&self.db, self.db.default_deadline())
                .await?;
            // Nothing stored: the append is refused further on for its offset.
            let Some((generation, received)) = stored else {
                continue;
            };
            let head = super::archived::read(
                &self.db,
                described.file_key,
                generation,
                0,
                received.min(files::HEAD_BYTES as u64),
            )
            .await?;
            *file = describe(source, &append.log, &head);
        }
        Ok(())
    }

    /// After a write that was cut short (here, or by a local run): with no write of this
    /// server under way and no local run, postings of events that were not stored are dropped
    /// and the statistics made to count what is stored, before anything is written again.
    async fn repair_if_cut(&self) -> Result<(), AppendError> {
        let cut_here = !self.cut.lock().expect("cut sessions").is_empty();
        if !cut_here && !super::lock::failed_write_noted_of(&self.config) {
            return Ok(());
        }
        let _alone = self.writing.write().await;
        let Some(lock) = super::lock::IngestLock::acquire(&self.config).await else {
            return Ok(());
        };
        let cut: Vec<u64> = std::mem::take(&mut *self.cut.lock().expect("cut sessions"));
        if !lock.failed_write_noted() && cut.is_empty() {
            return Ok(());
        }
        tracing::warn!("a write was cut short: checking the index and its statistics");
        // Sessions of a cut write holding an event twice are rebuilt from the archive.
        let doubled = writer::stored_twice(&self.db, &cut).await?;
        if !doubled.is_empty() {
            tracing::warn!(
                sessions = doubled.len(),
                "rebuilding sessions a cut write stored twice"
            );
            let selection = super::reindex::Selection {
                sessions: doubled,
                ..super::reindex::Selection::default()
            };
            let scratch = self.config.embedded.data_dir_path().join("repair");
            super::reindex::run(&self.config, &self.db, &selection, &scratch, false).await?;
        }
        super::repair(&self.db, &lock).await?;
        Ok(())
    }

    /// Holds the lock of every log named (one append at a time per log), taken in key order
    /// so two requests naming the same logs cannot wait on each other.
    async fn lock_all(
        &self,
        files: &[Result<LogFile, AppendError>],
    ) -> Vec<tokio::sync::OwnedMutexGuard<()>> {
        let mut keys: Vec<u64> = files
            .iter()
            .filter_map(|f| f.as_ref().ok().map(|f| f.file_key))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        self.lock_keys(&self.locks, keys).await
    }

    /// Holds the lock of each of `keys` (sorted, so two holders never wait on each other).
    async fn lock_keys(
        &self,
        locks: &Locks,
        keys: Vec<u64>,
    ) -> Vec<tokio::sync::OwnedMutexGuard<()>> {
        let mut held = Vec::with_capacity(keys.len());
        for key in keys {
            held.push(Self::lock(locks, key).lock_owned().await);
        }
        held
    }

    fn lock(locks: &Locks, key: u64) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = locks.lock().expect("locks");
        if let Some(lock) = locks.get(&key).and_then(Weak::upgrade) {
            return lock;
        }
        if locks.len() > 1024 {
            locks.retain(|_, lock| lock.strong_count() > 0);
        }
        let lock = Arc::new(tokio::sync::Mutex::new(()));
        locks.insert(key, Arc::downgrade(&lock));
        lock
    }

    /// Each append's bytes with credentials masked (`None`: none there), worked out on a
    /// blocking thread: the rules look at every line holding a word such as `pwd`, which on a
    /// request of many megabytes is CPU work the async runtime must not wait for.
    async fn mask_all(
        &self,
        body: &bytes::Bytes,
        appends: &[Append<'_>],
    ) -> Result<Vec<Option<Vec<u8>>>, AppendError> {
        mask_off_runtime(&self.masker, body, appends).await
    }

    /// What to parse: where to resume and the bytes from there (stored ones first), `None`
    /// when the request holds nothing new, or the archive ranges to read first. `sent.masked`
    /// is the append's bytes as the archive holds them (credentials overwritten): what is
    /// compared with it, and what is added to it.
    fn plan(
        &self,
        file: &LogFile,
        stored: &Stored,
        append: &Append<'_>,
        sent: &Sent,
        archive: &archive::Archive,
    ) -> Result<Step, AppendError> {
        let masked = &sent.masked[..];
        let checkpoint = stored.checkpoint.as_ref();
        let (received, generation) = checkpoint.map_or((0, 0), |c| (c.received, c.generation));
        let range = |from: u64, to: u64| archive::Range {
            file_key: file.file_key,
            generation,
            from,
            to,
        };
        if append.replace {
            if append.offset != 0 {
                return Err(AppendError::Invalid(
                    "replace=true sends a log from offset 0".into(),
                ));
            }
            let had_rows = stored.max_line.is_some() || checkpoint.is_some();
            let resume = Resume::from_scratch(file, had_rows, checkpoint);
            return Ok(Step::Ready(Some(Box::new(Plan::fresh(
                resume,
                sent.raw.clone(),
                sent.masked.clone(),
            )))));
        }
        if append.offset > received {
            return Err(AppendError::OffsetMismatch {
                received,
                generation,
            });
        }
        // A range (partly) stored already must be what is stored: known from the checkpoint's
        // fingerprints where the range ends where the log does (a request resent after its
        // answer was lost), else by reading the few stored bytes it covers.
        let overlap = (received - append.offset).min(append.bytes.len() as u64) as usize;
        if overlap > 0 {
            let same = match checkpoint.and_then(|c| fingerprints_match(c, append.offset, masked)) {
                Some(same) => same,
                None => {
                    let stored_range = range(append.offset, append.offset + overlap as u64);
                    match archive.get(stored_range) {
                        Some(stored_bytes) => stored_bytes == &masked[..overlap],
                        None => return Ok(Step::Read(vec![stored_range])),
                    }
                }
            };
            if !same {
                return Err(AppendError::ContentMismatch {
                    received,
                    generation,
                });
            }
        }
        let (new, masked_new) = (sent.raw.slice(overlap..), sent.masked.slice(overlap..));
        if new.is_empty() {
            return Ok(Step::Ready(None));
        }
        let Some(checkpoint) = checkpoint else {
            let resume = Resume::from_scratch(file, stored.max_line.is_some(), None);
            return Ok(Step::Ready(Some(Box::new(Plan::fresh(
                resume, new, masked_new,
            )))));
        };
        let resumed = Resume::from_checkpoint(file, stored)
            .filter(|_| checkpoint.session_key == file.session_key);
        let resume = match resumed {
            Some(resume) => {
                // Only a line still being written lies between the checkpoint and `received`.
                if received - resume.offset > self.config.ingest.max_line_bytes as u64 {
                    let Some((head, before, _)) = around(archive, range, received, received) else {
                        return Ok(Step::Read(around_ranges(range, received, received)));
                    };
                    return Ok(Step::Ready(Some(Box::new(past_long_line(
                        checkpoint, resume, received, new, masked_new, head, before,
                    )))));
                }
                resume
            }
            // Saved by an older parser, or under another session than the log's own identity:
            // parse the whole stored log again (same generation).
            None => {
                let mut resume = Resume::from_scratch(file, true, None);
                if checkpoint.session_key != file.session_key {
                    resume
                        .retractions
                        .push(Retraction::session(checkpoint.session_key));
                }
                resume.generation = generation;
                resume
            }
        };
        let Some((head, before, tail)) = around(archive, range, resume.offset, received) else {
            return Ok(Step::Read(around_ranges(range, resume.offset, received)));
        };
        let tail = Bytes::copy_from_slice(tail);
        let log = |new: Bytes| ReceivedLog {
            base: resume.offset,
            tail: tail.clone(),
            bytes: new,
            head: head.to_vec(),
            before: before.to_vec(),
        };
        Ok(Step::Ready(Some(Box::new(Plan {
            log: log(new),
            view: log(masked_new.clone()),
            resume,
            chunk: Some((received, masked_new)),
            skipped_lines: 0,
        }))))
    }

    /// Parses the plans' bytes on a blocking thread into one batch (with the archived
    /// chunks), and what each log's append did.
    async fn parse(
        &self,
        work: Vec<(LogFile, Stored, Plan)>,
    ) -> Result<(Batch, Vec<Appended>), AppendError> {
        let settings = ReadSettings {
            // One request, one batch: written together or not at all.
            batch_events: usize::MAX,
            archive: false,
            ..read_settings(&self.config)
        };
        let (redactor, self_tools) = (self.redactor.clone(), self.self_tools.clone());
        tokio::task::spawn_blocking(move || {
            let mut batch = Batch::default();
            let mut appended = Vec::with_capacity(work.len());
            for (file, stored, plan) in work {
                let (log_batch, counters) = parse_one(
                    settings.clone(),
                    &redactor,
                    &self_tools,
                    file,
                    &stored,
                    plan,
                )?;
                let checkpoint = log_batch
                    .checkpoints
                    .last()
                    .ok_or_else(|| AppendError::Internal("no checkpoint was made".into()))?;
                appended.push(Appended {
                    received: checkpoint.received,
                    parsed: checkpoint.offset,
                    generation: checkpoint.generation,
                    duplicate: false,
                    bytes: counters.bytes,
                    lines: counters.lines,
                    events: counters.events,
                    malformed: counters.malformed,
                    redactions: counters.redactions,
                    sessions: counters.sessions,
                    future_events: counters.future_events,
                });
                merge(&mut batch, log_batch);
            }
            Ok((batch, appended))
        })
        .await
        .map_err(|e| AppendError::Internal(e.to_string()))?
    }
}

/// What planning one log's append needs next.
enum Step {
    /// Planned: what to parse, or nothing new.
    Ready(Option<Box<Plan>>),
    /// These archive ranges first.
    Read(Vec<archive::Range>),
}

/// Whether the bytes an append resends are those stored, by the checkpoint's fingerprints:
/// `Some` when the append holds the (up to) 4 KiB before the stored end (and the first 4 KiB,
/// for one sent from the start), `None` when it cannot tell.
fn fingerprints_match(checkpoint: &CheckpointRow, offset: u64, masked: &[u8]) -> Option<bool> {
    let received = checkpoint.received;
    let take = received.min(FINGERPRINT_BYTES);
    let tail_from = (received - take).checked_sub(offset)? as usize;
    let tail = masked.get(tail_from..tail_from + take as usize)?;
    let mut same = xxhash_rust::xxh3::xxh3_64(tail) == checkpoint.tail_hash;
    if offset == 0 {
        same &= xxhash_rust::xxh3::xxh3_64(&masked[..take as usize]) == checkpoint.head_hash;
    }
    Some(same)
}

/// The archive ranges [`around`] reads.
fn around_ranges(
    range: impl Fn(u64, u64) -> archive::Range,
    offset: u64,
    to: u64,
) -> Vec<archive::Range> {
    let from = offset.saturating_sub(FINGERPRINT_BYTES);
    let mut ranges = vec![range(from, to)];
    if from > 0 {
        ranges.push(range(0, FINGERPRINT_BYTES));
    }
    ranges
}

/// From the archive: the first 4 KiB of a log, the (up to) 4 KiB before `offset`, and the
/// bytes `[offset, to)`; `None` until [`around_ranges`] are read.
fn around(
    archive: &archive::Archive,
    range: impl Fn(u64, u64) -> archive::Range,
    offset: u64,
    to: u64,
) -> Option<(&[u8], &[u8], &[u8])> {
    let from = offset.saturating_sub(FINGERPRINT_BYTES);
    let read = archive.get(range(from, to))?;
    let (before, rest) = read.split_at((offset - from) as usize);
    let head = if from == 0 {
        before
    } else {
        archive.get(range(0, FINGERPRINT_BYTES))?
    };
    Some((head, before, rest))
}

/// The unparsed part of the log is one line longer than `ingest.max_line_bytes`: it is not
/// read back; parsing resumes after its end, if `new` holds it.
fn past_long_line(
    checkpoint: &CheckpointRow,
    mut resume: Resume,
    received: u64,
    new: Bytes,
    masked_new: Bytes,
    head: &[u8],
    before: &[u8],
) -> Plan {
    let (base, skipped) = match memchr::memchr(b'\n', &new) {
        Some(at) => (received + at as u64 + 1, 1),
        None => (received + new.len() as u64, 0),
    };
    let cut = (base - received) as usize;
    if skipped == 1 {
        tracing::warn!(path = %checkpoint.path, "skipping a pushed line longer than ingest.max_line_bytes");
        resume.offset = base;
        resume.line_no += 1;
    }
    let log = |new: &Bytes| {
        let mut before = [before, &new[..cut]].concat();
        let keep = before.len().saturating_sub(FINGERPRINT_BYTES as usize);
        before.drain(..keep);
        ReceivedLog {
            base,
            tail: Bytes::new(),
            bytes: new.slice(cut..),
            head: head.to_vec(),
            before,
        }
    };
    Plan {
        log: log(&new),
        view: log(&masked_new),
        resume,
        chunk: Some((received, masked_new)),
        skipped_lines: skipped,
    }
}

/// Each append's bytes (pieces of `body`) masked on a blocking thread; `None` where nothing
/// needed masking.
async fn mask_off_runtime(
    masker: &Arc<Redactor>,
    body: &bytes::Bytes,
    appends: &[Append<'_>],
) -> Result<Vec<Option<Vec<u8>>>, AppendError> {
    let masker = masker.clone();
    let pieces: Vec<bytes::Bytes> = appends.iter().map(|a| body.slice_ref(a.bytes)).collect();
    tokio::task::spawn_blocking(move || {
        pieces
            .iter()
            .map(|piece| match masker.mask(piece).0 {
                std::borrow::Cow::Owned(masked) => Some(masked),
                std::borrow::Cow::Borrowed(_) => None,
            })
            .collect()
    })
    .await
    .map_err(|e| AppendError::Internal(e.to_string()))
}

/// Parses one log's plan into a batch (with the archived chunk) and its counts.
fn parse_one(
    settings: ReadSettings,
    redactor: &Redactor,
    self_tools: &SelfTools,
    file: LogFile,
    stored: &Stored,
    plan: Plan,
) -> Result<(Batch, Counters), AppendError> {
    let progress = indicatif::ProgressBar::hidden();
    let mut batches = Vec::new();
    let mut reader = Reader::new(
        settings,
        redactor,
        self_tools,
        Box::new(|batch| {
            batches.push(batch);
            Ok(())
        }),
        &progress,
    );
    reader
        .read_log(&file, &plan.log, plan.resume, stored)
        .map_err(|e| match e {
            ReadError::Io(e) => AppendError::Internal(e.to_string()),
            ReadError::WriterGone => AppendError::Internal("the batch was dropped".into()),
        })?;
    let mut counters = reader
        .finish()
        .map_err(|_| AppendError::Internal("the batch was dropped".into()))?;
    counters.malformed += plan.skipped_lines;
    let mut batch = Batch::default();
    for part in batches {
        merge(&mut batch, part);
    }
    // Clients compare these with their own files masked the same way: they are the archive's.
    for checkpoint in &mut batch.checkpoints {
        (checkpoint.head_hash, checkpoint.tail_hash) =
            plan.view
                .fingerprint(checkpoint.received)
                .map_err(|e| AppendError::Internal(e.to_string()))?;
    }
    if let Some((offset, data)) = plan.chunk {
        counters.bytes = data.len() as u64;
        let generation = batch.checkpoints.last().map_or(0, |c| c.generation);
        // In pieces: the insert then streams them rather than encoding one row of the whole.
        for at in (0..data.len()).step_by(ARCHIVE_PIECE_BYTES) {
            batch.chunks.push(RawChunkRow {
                file_key: file.file_key,
                generation,
                offset: offset + at as u64,
                data: data.slice(at..(at + ARCHIVE_PIECE_BYTES).min(data.len())),
                received_at: 0,
            });
        }
    }
    Ok((batch, counters))
}

/// An append's bytes as sent and as the archive holds them (the same piece of the body when
/// nothing needed masking).
struct Sent {
    raw: Bytes,
    masked: Bytes,
}

/// The largest row of the archive a request writes.
const ARCHIVE_PIECE_BYTES: usize = 1 << 20;

/// What one append parses.
struct Plan {
    /// What is parsed: the new bytes as received (credentials are redacted as they are read).
    log: ReceivedLog,
    /// The same bytes masked as the archive holds them, for the fingerprints clients compare.
    view: ReceivedLog,
    resume: Resume,
    /// The new bytes to archive, masked, and their offset.
    chunk: Option<(u64, Bytes)>,
    /// Lines skipped before parsing (too long to read back).
    skipped_lines: u64,
}

impl Plan {
    /// Parsing from the start of `bytes`, which are all new (`masked`, as archived).
    fn fresh(resume: Resume, bytes: Bytes, masked: Bytes) -> Self {
        let received = |bytes| ReceivedLog {
            base: 0,
            tail: Bytes::new(),
            bytes,
            head: Vec::new(),
            before: Vec::new(),
        };
        Self {
            log: received(bytes),
            view: received(masked.clone()),
            resume,
            chunk: Some((0, masked)),
            skipped_lines: 0,
        }
    }
}

/// Adds `part` to `all`.
fn merge(all: &mut Batch, part: Batch) {
    all.retractions.extend(part.retractions);
    all.events.extend(part.events);
    all.turns.extend(part.turns);
    all.sessions.extend(part.sessions);
    all.chunks.extend(part.chunks);
    all.checkpoints.extend(part.checkpoints);
}

/// The logs of a request, as `source` sends them; a log named twice is refused (its appends
/// would race each other inside one batch).
fn describe_all(source: &str, appends: &[Append<'_>]) -> Vec<Result<LogFile, AppendError>> {
    let mut seen = std::collections::HashSet::new();
    appends
        .iter()
        .map(|append| {
            // A log sent from its start carries its first records; a continued one is
            // identified from its archive (`identify_continued`).
            let head = if append.offset == 0 {
                &append.bytes[..append.bytes.len().min(files::HEAD_BYTES)]
            } else {
                &[][..]
            };
            let file = describe(source, &append.log, head)?;
            if !seen.insert(file.file_key) {
                return Err(AppendError::Invalid(format!(
                    "{} is named twice in one request",
                    append.log.path
                )));
            }
            Ok(file)
        })
        .collect()
}

/// Parses whole logs as if each were newly pushed, without a store: the rows a push of it
/// would write. What the fuzz targets drive.
pub struct LogParser {
    settings: ReadSettings,
    redactor: Redactor,
    masker: Redactor,
    self_tools: SelfTools,
}

impl LogParser {
    pub fn new(config: &Config) -> Result<Self, regex::Error> {
        Ok(Self {
            settings: ReadSettings {
                batch_events: usize::MAX,
                archive: false,
                ..read_settings(config)
            },
            redactor: Redactor::new(&config.ingest.redaction)?,
            masker: Redactor::builtin(),
            self_tools: SelfTools::new(&config.tools.self_server_names),
        })
    }

    /// The rows of `bytes` read as the whole log `path` of `harness`.
    pub fn parse(&self, harness: Harness, path: &str, bytes: &[u8]) -> Result<Batch, AppendError> {
        let log = LogName {
            harness,
            path: path.to_owned(),
            session: None,
        };
        let file = describe("parser", &log, &bytes[..bytes.len().min(files::HEAD_BYTES)])?;
        let resume = Resume::from_scratch(&file, false, None);
        let masked = self.masker.mask(bytes).0.into_owned();
        let plan = Plan::fresh(resume, Bytes::copy_from_slice(bytes), masked.into());
        parse_one(
            self.settings.clone(),
            &self.redactor,
            &self.self_tools,
            file,
            &Stored::default(),
            plan,
        )
        .map(|(batch, _)| batch)
    }
}

/// The log a client names, as `source` sends it; `head` is its start, as far as known.
fn describe(source: &str, log: &LogName, head: &[u8]) -> Result<LogFile, AppendError> {
    if log.path.is_empty() || log.path.len() > MAX_PATH_BYTES || log.path.contains('\0') {
        return Err(AppendError::Invalid(format!(
            "path must be 1-{MAX_PATH_BYTES} bytes without NUL"
        )));
    }
    let path = Path::new(&log.path);
    let identity = crate::harness::Identity::of(log.harness, path, || head).map(|identity| {
        match &log.session {
            Some(hint) if *hint != identity.native_id => {
                let under = crate::harness::Identity::under(&identity.native_id, path);
                if *hint == under.native_id {
                    under
                } else {
                    identity
                }
            }
            _ => identity,
        }
    });
    files::describe_log(path, log.harness, source, Origin::Push, 0, identity)
        .map_err(|e| AppendError::Invalid(e.to_string()))
}

fn status_of(log: &LogName, checkpoint: Option<&CheckpointRow>) -> LogStatus {
    let hex = |hash: u64| format!("{hash:016x}");
    LogStatus {
        harness: log.harness,
        path: log.path.clone(),
        received: checkpoint.map_or(0, |c| c.received),
        parsed: checkpoint.map_or(0, |c| c.offset),
        generation: checkpoint.map_or(0, |c| c.generation),
        head_hash: checkpoint.map(|c| hex(c.head_hash)),
        tail_hash: checkpoint.map(|c| hex(c.tail_hash)),
    }
}

/// Sets the last-push gauges from the checkpoints (best effort, at start-up), so a source that
/// went quiet before a restart still shows as quiet.
pub(crate) async fn restore_push_metrics(db: Db) {
    let last: Result<Vec<(String, i64)>, DbError> = db
        .read(
            "ingest_last_pushes",
            "SELECT toString(source), toUnixTimestamp64Milli(max(updated_at)) \
             FROM ingest_checkpoints FINAL WHERE origin = 'push' GROUP BY source",
        )
        .fetch_all(&db, db.default_deadline())
        .await;
    match last {
        Ok(rows) => {
            for (source, ms) in rows {
                db.metrics().restore_last_push(&source, ms as f64 / 1000.0);
            }
        }
        Err(error) => tracing::debug!(%error, "could not read the last pushes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn test_masking_leaves_the_runtime_free_for_other_requests() {
        let line = "2026-05-01 用户 pwd = hunter2hunter2 登录失败，密码错误\n";
        let body = bytes::Bytes::from(line.repeat(20_000));
        let appends = [Append {
            log: LogName {
                harness: Harness::ClaudeCode,
                path: "/x.jsonl".into(),
                session: None,
            },
            offset: 0,
            replace: false,
            bytes: &body[..],
        }];
        // On a one-thread runtime another task runs during masking only if masking is not
        // done on that thread.
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let other = tokio::spawn({
            let ran = ran.clone();
            async move { ran.store(true, std::sync::atomic::Ordering::SeqCst) }
        });
        let masked = mask_off_runtime(&Arc::new(Redactor::builtin()), &body, &appends)
            .await
            .unwrap();
        assert!(ran.load(std::sync::atomic::Ordering::SeqCst));
        other.await.unwrap();
        let masked = masked[0].as_ref().expect("credentials masked");
        assert_eq!(masked.len(), body.len());
        assert!(!String::from_utf8_lossy(masked).contains("hunter2"));
    }
}
