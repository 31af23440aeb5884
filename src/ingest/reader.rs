//! Reading logs into batches of rows, resuming from checkpoints.
//!
//! Runs on a blocking thread. A log's bytes come from a file on disk ([`DiskLog`]) or from what
//! a client pushed ([`ReceivedLog`]); either is read from its checkpoint (or from the start when
//! it is new, truncated or replaced), line by line, and full batches go to a sink. A batch
//! carries, for every log it touches, the checkpoint at the point the batch ends, so a
//! checkpoint is written only together with the rows it covers.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::files::LogFile;
use super::redact::Redactor;
use super::session::{BuildSettings, SessionBuilder, SessionState};
use crate::harness::adapter::AdapterOutput;
use crate::harness::draft::SelfTools;
use crate::harness::{AdapterState, ReadContext};
use crate::rows::{CheckpointRow, EventRow, RawChunkRow, SessionRow, TurnRow};
use crate::tokenize::Indexer;
use crate::vocab::{EventType, Harness};

/// Bytes hashed at each end of the received part of a log to recognise it again.
pub const FINGERPRINT_BYTES: u64 = 4096;

/// Rows to write together, in this order: retractions, events, turns, sessions, archived
/// chunks, checkpoints.
#[derive(Debug, Default)]
pub struct Batch {
    pub retractions: Vec<Retraction>,
    pub events: Vec<EventRow>,
    pub turns: Vec<TurnRow>,
    pub sessions: Vec<SessionRow>,
    pub chunks: Vec<RawChunkRow>,
    pub checkpoints: Vec<CheckpointRow>,
}

/// How many rows of each kind a batch holds, to go back to.
#[derive(Debug, Clone, Copy)]
pub struct Marks([usize; 6]);

impl Batch {
    pub fn marks(&self) -> Marks {
        Marks([
            self.retractions.len(),
            self.events.len(),
            self.turns.len(),
            self.sessions.len(),
            self.chunks.len(),
            self.checkpoints.len(),
        ])
    }

    /// Drops every row added since `marks`.
    pub fn truncate_to(&mut self, Marks(m): Marks) {
        self.retractions.truncate(m[0]);
        self.events.truncate(m[1]);
        self.turns.truncate(m[2]);
        self.sessions.truncate(m[3]);
        self.chunks.truncate(m[4]);
        self.checkpoints.truncate(m[5]);
    }
}

/// Rows to remove before a session is (re)read: everything from lines after `after_line`, and
/// turns after `keep_turns`. `after_line` 0 removes the whole session. `archive` names a log
/// whose archived chunks of earlier generations go too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retraction {
    pub session_key: u64,
    pub after_line: u32,
    pub keep_turns: u32,
    pub archive: Option<(u64, u32)>,
    /// A log whose checkpoint goes first, so that a run cut off while the session is rebuilt
    /// leaves it to be read from the start, never a checkpoint over missing rows.
    pub checkpoint: Option<u64>,
}

impl Retraction {
    /// All of a session's rows.
    pub fn session(session_key: u64) -> Self {
        Self {
            session_key,
            after_line: 0,
            keep_turns: 0,
            archive: None,
            checkpoint: None,
        }
    }
}

/// What the database already holds for a log: its checkpoint, and the highest line number of
/// any stored event of its session.
#[derive(Debug, Clone, Default)]
pub struct Stored {
    pub checkpoint: Option<CheckpointRow>,
    pub max_line: Option<u32>,
    /// The session holds an event twice.
    pub doubled: bool,
}

/// The parser state saved in a checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FileState {
    adapter: AdapterState,
    session: SessionState,
}

impl FileState {
    fn fresh(harness: Harness) -> Self {
        Self {
            adapter: AdapterState::fresh(harness),
            session: SessionState::default(),
        }
    }
}

/// Counts for the run summary.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counters {
    pub files_read: u64,
    pub files_unchanged: u64,
    pub files_reread: u64,
    /// Logs that could not be read, each as `path: why`.
    pub unreadable: Vec<String>,
    pub lines: u64,
    pub malformed: u64,
    pub events: u64,
    pub sessions: u64,
    pub redactions: u64,
    pub bytes: u64,
    /// Events dated later than the reading machine's clock allows (see
    /// [`BuildSettings::not_after`]).
    pub future_events: u64,
}

/// A log's bytes, wherever they are.
pub trait LogBytes {
    /// How many bytes there are.
    fn size(&self) -> u64;
    /// Hashes of the first and the last (up to) 4 KiB before `offset`.
    fn fingerprint(&self, offset: u64) -> io::Result<(u64, u64)>;
    /// The bytes from `offset` to the end.
    fn from(&self, offset: u64) -> io::Result<Box<dyn BufRead + '_>>;
    /// The whole of these bytes is archived already (pushed logs): the checkpoint records
    /// them all as received, parsed or not.
    fn archived(&self) -> bool {
        false
    }
    /// When the log was last written (ms since the epoch), where known.
    fn modified_ms(&self) -> Option<i64> {
        None
    }
}

/// When a file was last written, in ms since the epoch.
fn modified_ms(metadata: &std::fs::Metadata) -> Option<i64> {
    let since = metadata
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    i64::try_from(since.as_millis()).ok()
}

/// A log file on disk.
pub struct DiskLog {
    content: DiskContent,
    size: u64,
    modified_ms: Option<i64>,
    /// The file is a copy of archived bytes (re-parsed by `reindex`).
    archived: bool,
}

/// Where a disk log's bytes are read from.
enum DiskContent {
    /// The file itself (JSON Lines).
    File(File),
    /// A rendering: the JSON Lines a source that is not an append-only log stands for.
    Lines(Vec<u8>),
}

impl DiskLog {
    /// The log at `path`, written by `harness`: the file itself, or its rendering when it is
    /// not an append-only log (see [`rendered`]).
    pub fn open(path: &std::path::Path, harness: Harness) -> io::Result<Self> {
        let Some(lines) = crate::harness::render(harness, path)? else {
            return Self::file(path);
        };
        Ok(Self {
            size: lines.len() as u64,
            content: DiskContent::Lines(lines),
            modified_ms: modified_ms(&std::fs::metadata(crate::harness::backing_file(path))?),
            archived: false,
        })
    }

    /// The file at `path` as it is.
    fn file(path: &std::path::Path) -> io::Result<Self> {
        let file = File::open(path)?;
        let metadata = file.metadata()?;
        Ok(Self {
            content: DiskContent::File(file),
            size: metadata.len(),
            modified_ms: modified_ms(&metadata),
            archived: false,
        })
    }

    /// A file holding a log's archived bytes.
    pub fn archive_copy(path: &std::path::Path) -> io::Result<Self> {
        Ok(Self {
            archived: true,
            // The copy's time is not the log's.
            modified_ms: None,
            ..Self::file(path)?
        })
    }

    fn read_exact_at(&self, buffer: &mut [u8], offset: u64) -> io::Result<()> {
        match &self.content {
            DiskContent::File(file) => file.read_exact_at(buffer, offset),
            DiskContent::Lines(lines) => {
                let from = usize::try_from(offset).unwrap_or(usize::MAX);
                let piece = lines
                    .get(from..from.saturating_add(buffer.len()))
                    .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
                buffer.copy_from_slice(piece);
                Ok(())
            }
        }
    }
}

impl LogBytes for DiskLog {
    fn size(&self) -> u64 {
        self.size
    }

    fn modified_ms(&self) -> Option<i64> {
        self.modified_ms
    }

    fn fingerprint(&self, offset: u64) -> io::Result<(u64, u64)> {
        let head_len = offset.min(FINGERPRINT_BYTES);
        let mut head = vec![0; head_len as usize];
        self.read_exact_at(&mut head, 0)?;
        let mut tail = vec![0; head_len as usize];
        self.read_exact_at(&mut tail, offset - head_len)?;
        Ok((
            xxhash_rust::xxh3::xxh3_64(&head),
            xxhash_rust::xxh3::xxh3_64(&tail),
        ))
    }

    fn from(&self, offset: u64) -> io::Result<Box<dyn BufRead + '_>> {
        let file = match &self.content {
            DiskContent::File(file) => file,
            DiskContent::Lines(lines) => {
                let from = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(lines.len());
                return Ok(Box::new(&lines[from..]));
            }
        };
        let mut reader = BufReader::with_capacity(1 << 20, file);
        reader.seek(SeekFrom::Start(offset))?;
        // Only what the size said: a file still growing is read up to that point this time.
        Ok(Box::new(reader.take(self.size.saturating_sub(offset))))
    }

    fn archived(&self) -> bool {
        self.archived
    }
}

/// Bytes a client pushed: the log from `base` to its end, with the bytes around it that its
/// fingerprints need (the first 4 KiB of the log, and up to 4 KiB before `base`). The log from
/// `base` is `tail` (stored bytes of a line still being written) then `bytes` (what the request
/// brought): pieces of the request's body, shared rather than copied.
pub struct ReceivedLog {
    pub base: u64,
    pub tail: bytes::Bytes,
    pub bytes: bytes::Bytes,
    pub head: Vec<u8>,
    pub before: Vec<u8>,
}

impl ReceivedLog {
    fn len(&self) -> usize {
        self.tail.len() + self.bytes.len()
    }

    /// The byte `at` bytes past `base`.
    fn get(&self, at: usize) -> Option<u8> {
        match at.checked_sub(self.tail.len()) {
            None => self.tail.get(at).copied(),
            Some(at) => self.bytes.get(at).copied(),
        }
    }
}

impl LogBytes for ReceivedLog {
    fn size(&self) -> u64 {
        self.base + self.len() as u64
    }

    fn fingerprint(&self, offset: u64) -> io::Result<(u64, u64)> {
        let take = offset.min(FINGERPRINT_BYTES);
        // The log's start: the head, continued by what is in memory when the log is short.
        let mut head: Vec<u8> = self.head.iter().copied().take(take as usize).collect();
        if (head.len() as u64) < take {
            let from = (head.len() as u64).saturating_sub(self.base) as usize;
            let more = (take as usize - head.len()).min(self.len().saturating_sub(from));
            head.extend((from..from + more).filter_map(|at| self.get(at)));
        }
        // The bytes before `offset`: from `before` and the received bytes.
        let start = offset - take;
        let mut tail = Vec::with_capacity(take as usize);
        for at in start..offset {
            let byte = if at >= self.base {
                self.get((at - self.base) as usize)
            } else {
                let before_start = self.base - self.before.len() as u64;
                at.checked_sub(before_start)
                    .and_then(|i| self.before.get(i as usize).copied())
            };
            match byte {
                Some(byte) => tail.push(byte),
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the bytes before the received part are missing",
                    ));
                }
            }
        }
        Ok((
            xxhash_rust::xxh3::xxh3_64(&head),
            xxhash_rust::xxh3::xxh3_64(&tail),
        ))
    }

    fn from(&self, offset: u64) -> io::Result<Box<dyn BufRead + '_>> {
        let at = offset.checked_sub(self.base).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "offset before the received part",
            )
        })?;
        let at = (at as usize).min(self.len());
        Ok(match at.checked_sub(self.tail.len()) {
            Some(at) => Box::new(&self.bytes[at..]),
            None => Box::new((&self.tail[at..]).chain(&self.bytes[..])),
        })
    }

    fn archived(&self) -> bool {
        true
    }
}

/// Where reading a log starts.
pub struct Resume {
    pub offset: u64,
    pub line_no: u32,
    state: FileState,
    pub retractions: Vec<Retraction>,
    /// The archive generation the log's bytes belong to.
    pub generation: u32,
}

impl Resume {
    /// From the start: a new log, or one whose stored rows (if `had_rows`) must go first. A
    /// replaced log begins the generation after `previous`.
    pub fn from_scratch(file: &LogFile, had_rows: bool, previous: Option<&CheckpointRow>) -> Self {
        let generation = previous.map_or(0, |c| c.generation + 1);
        Self {
            offset: 0,
            line_no: 0,
            state: FileState::fresh(file.harness),
            retractions: had_rows
                .then_some(Retraction {
                    session_key: file.session_key,
                    after_line: 0,
                    keep_turns: 0,
                    archive: previous.map(|_| (file.file_key, generation)),
                    checkpoint: None,
                })
                .into_iter()
                .collect(),
            generation,
        }
    }

    /// From the checkpoint; `None` when its saved state cannot be read (an older format).
    /// Rows past the checkpoint (a run that stopped before writing it) are retracted first.
    pub fn from_checkpoint(file: &LogFile, stored: &Stored) -> Option<Self> {
        let checkpoint = stored.checkpoint.as_ref()?;
        let state: FileState = serde_json::from_str(&checkpoint.state).ok()?;
        let orphans = stored.max_line.is_some_and(|max| max > checkpoint.line_no);
        Some(Self {
            offset: checkpoint.offset,
            line_no: checkpoint.line_no,
            retractions: orphans
                .then_some(Retraction {
                    session_key: file.session_key,
                    after_line: checkpoint.line_no,
                    keep_turns: state.session.turn.ordinal,
                    archive: None,
                    checkpoint: None,
                })
                .into_iter()
                .collect(),
            state,
            generation: checkpoint.generation,
        })
    }

    /// From the start again, to rebuild what a log contributed (`reindex`): the rows of the
    /// session its checkpoint names go first; the archive stays as it is.
    pub fn again(file: &LogFile, checkpoint: &CheckpointRow) -> Self {
        Self {
            offset: 0,
            line_no: 0,
            state: FileState::fresh(file.harness),
            retractions: vec![Retraction::session(checkpoint.session_key)],
            generation: checkpoint.generation,
        }
    }

    /// From the start again, for a log whose session holds an event twice: its checkpoint and
    /// every row of its session go before it is read.
    pub fn rebuild(file: &LogFile, checkpoint: Option<&CheckpointRow>) -> Self {
        // A new archive generation, as for a replaced log: the chunks read now replace all.
        let mut resume = Self::from_scratch(file, true, checkpoint);
        resume.retractions[0].checkpoint = Some(file.file_key);
        resume
    }

    /// Nothing to read: the checkpoint covers everything and nothing is orphaned.
    fn is_done(&self, len: u64) -> bool {
        self.offset == len && self.retractions.is_empty()
    }

    /// From the start, for a log whose checkpoint names another session than the log's own
    /// identity (a log stored before identities came from content): what it contributed to the
    /// old session goes, and it is read into its own.
    pub fn rekeyed(file: &LogFile, checkpoint: &CheckpointRow) -> Self {
        let mut resume = Self::from_scratch(file, true, Some(checkpoint));
        resume
            .retractions
            .push(Retraction::session(checkpoint.session_key));
        resume
    }
}

/// How logs are read.
#[derive(Debug, Clone)]
pub struct ReadSettings {
    /// Events per batch; a batch is sent when it has this many.
    pub batch_events: usize,
    pub build: BuildSettings,
    /// Longer lines are skipped as malformed, without being held in memory.
    pub max_line_bytes: usize,
    /// Archive the bytes read (local logs; pushed bytes are archived by the ingest API).
    pub archive: bool,
}

/// Where full batches go; an error means the writer has stopped.
pub type Sink<'a> = Box<dyn FnMut(Batch) -> Result<(), WriterGone> + 'a>;

pub struct Reader<'a> {
    settings: ReadSettings,
    redactor: &'a Redactor,
    self_tools: &'a SelfTools,
    sink: Sink<'a>,
    progress: &'a indicatif::ProgressBar,
    pub counters: Counters,
    batch: Batch,
    indexer: Indexer,
    /// Batches sent so far.
    sends: u64,
}

/// The writer has stopped (it failed); reading stops too.
#[derive(Debug, thiserror::Error)]
#[error("the writer stopped")]
pub struct WriterGone;

impl<'a> Reader<'a> {
    pub fn new(
        settings: ReadSettings,
        redactor: &'a Redactor,
        self_tools: &'a SelfTools,
        sink: Sink<'a>,
        progress: &'a indicatif::ProgressBar,
    ) -> Self {
        Self {
            settings,
            redactor,
            self_tools,
            sink,
            progress,
            counters: Counters::default(),
            batch: Batch::default(),
            indexer: Indexer::default(),
            sends: 0,
        }
    }

    /// Bytes that reading `file` will consume, for the progress bar.
    pub fn pending_bytes(file: &LogFile, stored: &Stored) -> u64 {
        match &stored.checkpoint {
            Some(cp) if cp.offset <= file.size => file.size - cp.offset,
            _ => file.size,
        }
    }

    /// Reads what is new in one file on disk into the current batch.
    pub fn read_file(&mut self, file: &LogFile, stored: &Stored) -> Result<(), WriterGone> {
        self.read_disk_log(file, stored, |log| resume_point(log, file, stored))
    }

    /// Reads one file on disk again from its start, replacing everything its session holds.
    pub fn reread_file(&mut self, file: &LogFile, stored: &Stored) -> Result<(), WriterGone> {
        self.read_disk_log(file, stored, |_| {
            Ok(Resume::rebuild(file, stored.checkpoint.as_ref()))
        })
    }

    fn read_disk_log(
        &mut self,
        file: &LogFile,
        stored: &Stored,
        resume: impl FnOnce(&DiskLog) -> io::Result<Resume>,
    ) -> Result<(), WriterGone> {
        let outcome = DiskLog::open(&file.path, file.harness).and_then(|log| {
            let resume = resume(&log)?;
            Ok((log, resume))
        });
        let result = match outcome {
            Ok((log, resume)) => self.read_log(file, &log, resume, stored),
            Err(error) => Err(ReadError::Io(error)),
        };
        match result {
            Ok(()) => Ok(()),
            Err(ReadError::Io(e)) => {
                tracing::warn!(file = %file.path.display(), error = %e, "cannot read log file; skipping it");
                self.counters
                    .unreadable
                    .push(format!("{}: {e}", file.path.display()));
                Ok(())
            }
            Err(ReadError::WriterGone) => Err(WriterGone),
        }
    }

    /// Reads `log` from `resume` to its end into the current batch (the ingest API decides the
    /// resume point of what it received).
    pub fn read_log(
        &mut self,
        file: &LogFile,
        log: &dyn LogBytes,
        resume: Resume,
        stored: &Stored,
    ) -> Result<(), ReadError> {
        if resume.is_done(log.size()) {
            self.counters.files_unchanged += 1;
            return Ok(());
        }
        if resume.offset == 0 && stored.checkpoint.is_some() {
            self.counters.files_reread += 1;
        }
        self.counters.files_read += 1;
        let Resume {
            offset,
            line_no,
            state,
            retractions,
            generation,
        } = resume;
        self.batch.retractions.extend(retractions);
        let mut cursor = Cursor {
            file,
            offset,
            line_no,
            generation,
            builder: SessionBuilder::new(
                file.session_key,
                SessionState {
                    fallback_ts: match state.session.fallback_ts {
                        0 => fallback_time(file, log),
                        kept => kept,
                    },
                    ..state.session
                },
                self.settings.build.clone(),
            ),
            adapter: state.adapter,
            archived_from: offset,
            archive: Vec::new(),
        };
        let events_before = cursor.builder.state.events;
        // What this read added, to take back if nothing in a new log was usable.
        let new_log = offset == 0 && stored.checkpoint.is_none() && stored.max_line.is_none();
        let (mark, sends, malformed) = (self.batch.marks(), self.sends, self.counters.malformed);
        let mut usable = 0u64;
        let mut lines = Lines::new(log.from(offset)?, self.settings.max_line_bytes);
        let mut out = AdapterOutput::default();
        while let Some(line) = lines.next()? {
            let (read, complete) = (line.len, line.complete);
            let bytes = match line.bytes {
                // Longer than allowed: skipped, without holding it.
                None if complete => {
                    cursor.consume(read, None, self.settings.archive);
                    self.note_line(read);
                    self.malformed(
                        file,
                        cursor.line_no,
                        "line longer than ingest.max_line_bytes",
                    );
                    continue;
                }
                // A line still being written: left for the next run.
                None => break,
                Some(bytes) => bytes,
            };
            // Validating is much faster than the lossy scan; invalid bytes are rare.
            let text = match std::str::from_utf8(bytes) {
                Ok(text) => std::borrow::Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(bytes),
            };
            let trimmed = text.trim();
            let parsed = serde_json::from_str::<Value>(trimmed);
            if !complete && parsed.is_err() {
                break;
            }
            cursor.consume(read, Some(bytes), self.settings.archive);
            self.note_line(read);
            if trimmed.is_empty() {
                continue;
            }
            let Some(record) = self.record(file, cursor.line_no, trimmed, parsed) else {
                continue;
            };
            out.drafts.clear();
            let redacted = &record.1;
            cursor.read_record(&record.0, redacted, self.self_tools, &mut out);
            // A record the adapter knows: one that made no event (a header) or a known one.
            let known = out.drafts.is_empty()
                || out
                    .drafts
                    .iter()
                    .any(|d| d.event_type != EventType::Unknown);
            usable += u64::from(known);
            for draft in out.drafts.drain(..) {
                cursor.builder.push(
                    draft,
                    cursor.line_no,
                    &mut self.indexer,
                    &mut self.batch.events,
                    &mut self.batch.turns,
                );
            }
            if self.batch.events.len() >= self.settings.batch_events {
                self.cut(&mut cursor, log)?;
                self.send()?;
            }
        }
        if new_log && usable == 0 && self.sends == sends && cursor.line_no > 0 && !log.archived() {
            // Not one record this harness's adapter knows: the log is not used (and is read
            // again next time), rather than stored as a session of unknown records. (Pushed
            // bytes are kept whatever they hold: the archive has them.)
            self.batch.truncate_to(mark);
            self.counters.files_read -= 1;
            let malformed = self.counters.malformed - malformed;
            self.counters.unreadable.push(format!(
                "{}: nothing in it is a {} log's record ({} lines, {malformed} malformed)",
                file.path.display(),
                file.harness.as_str(),
                cursor.line_no,
            ));
            return Ok(());
        }
        self.cut(&mut cursor, log)?;
        self.counters.future_events += cursor.builder.future_events;
        if cursor.builder.future_events > 0 {
            tracing::warn!(
                file = %file.path.display(),
                source = %file.source,
                events = cursor.builder.future_events,
                "events dated in the future: shown at the time they were read (a wrong clock?)"
            );
        }
        if cursor.builder.state.events > events_before {
            self.counters.sessions += 1;
        }
        Ok(())
    }

    fn note_line(&mut self, read: usize) {
        self.counters.lines += 1;
        self.counters.bytes += read as u64;
        self.progress.inc(read as u64);
    }

    /// The line as a JSON object (after redaction) and its redacted text; `None` (counted as
    /// malformed) when it is not one.
    fn record(
        &mut self,
        file: &LogFile,
        line_no: u32,
        trimmed: &str,
        parsed: Result<Value, serde_json::Error>,
    ) -> Option<(Value, String)> {
        let (redacted, redactions) = self.redactor.redact(trimmed);
        self.counters.redactions += redactions as u64;
        let record = match (redactions, parsed) {
            (0, Ok(value @ Value::Object(_))) => Ok(value),
            (_, Ok(Value::Object(_))) => {
                serde_json::from_str::<Value>(&redacted).map_err(|e| e.to_string())
            }
            (_, Ok(_)) => Err("not a JSON object".to_owned()),
            (_, Err(e)) => Err(e.to_string()),
        };
        match record {
            Ok(value) => Some((value, redacted.into_owned())),
            Err(error) => {
                self.malformed(file, line_no, &error);
                None
            }
        }
    }

    fn malformed(&mut self, file: &LogFile, line_no: u32, error: &str) {
        self.counters.malformed += 1;
        tracing::warn!(file = %file.path.display(), line = line_no, error, "skipping malformed line");
    }

    /// Adds the rows that describe `cursor`'s log as of now: its open turn, its session, the
    /// bytes read since the last cut (when archiving) and its checkpoint.
    fn cut(&mut self, cursor: &mut Cursor<'_>, log: &dyn LogBytes) -> Result<(), ReadError> {
        let file = cursor.file;
        if cursor.builder.state.events > 0 {
            if let Some(turn) = cursor.builder.open_turn_row(0) {
                self.batch.turns.push(turn);
            }
            self.batch.sessions.push(cursor.builder.session_row(
                file.harness.as_str(),
                &file.source,
                &file.native_id,
                0,
            ));
        }
        if !cursor.archive.is_empty() {
            // Archived with credentials masked (same length, so offsets hold).
            let archive = std::mem::take(&mut cursor.archive);
            let data = match self.redactor.mask(&archive).0 {
                std::borrow::Cow::Owned(masked) => masked,
                std::borrow::Cow::Borrowed(_) => archive,
            };
            self.batch.chunks.push(RawChunkRow {
                file_key: file.file_key,
                generation: cursor.generation,
                offset: cursor.archived_from,
                data: data.into(),
                received_at: 0,
            });
        }
        cursor.archived_from = cursor.offset;
        // The checkpoint fingerprints the bytes received: for a file on disk, those read.
        let received = if log.archived() {
            log.size()
        } else {
            cursor.offset
        };
        let (head_hash, tail_hash) = log.fingerprint(received)?;
        let state = FileState {
            adapter: cursor.adapter.clone(),
            session: cursor.builder.state.clone(),
        };
        self.batch.checkpoints.push(CheckpointRow {
            file_key: file.file_key,
            path: file.path.to_string_lossy().into_owned(),
            harness: file.harness.as_str().to_owned(),
            source: file.source.clone(),
            session_key: file.session_key,
            offset: cursor.offset,
            line_no: cursor.line_no,
            head_hash,
            tail_hash,
            state: serde_json::to_string(&state).expect("state serialises"),
            version: 0,
            received,
            generation: cursor.generation,
            origin: file.origin.as_str().to_owned(),
            updated_at: 0,
        });
        Ok(())
    }

    fn send(&mut self) -> Result<(), ReadError> {
        self.sends += 1;
        let batch = std::mem::take(&mut self.batch);
        self.counters.events += batch.events.len() as u64;
        (self.sink)(batch).map_err(|_| ReadError::WriterGone)
    }

    /// Sends whatever is left.
    pub fn finish(mut self) -> Result<Counters, WriterGone> {
        let empty = self.batch.checkpoints.is_empty() && self.batch.retractions.is_empty();
        if !empty {
            self.send().map_err(|_| WriterGone)?;
        }
        Ok(self.counters)
    }
}

/// Where to continue reading a file on disk, judging by its checkpoint: from the checkpoint
/// when the bytes before it are unchanged, from the start when the file is new, truncated or
/// replaced.
fn resume_point(log: &DiskLog, file: &LogFile, stored: &Stored) -> io::Result<Resume> {
    let had_rows = stored.max_line.is_some();
    let Some(checkpoint) = &stored.checkpoint else {
        return Ok(Resume::from_scratch(file, had_rows, None));
    };
    if checkpoint.session_key != file.session_key {
        tracing::info!(file = %file.path.display(), "log holds another session than stored for it; reading it again");
        return Ok(Resume::rekeyed(file, checkpoint));
    }
    let same_file = checkpoint.received <= log.size()
        && log.fingerprint(checkpoint.received)? == (checkpoint.head_hash, checkpoint.tail_hash);
    match Resume::from_checkpoint(file, stored).filter(|_| same_file) {
        Some(resume) => Ok(resume),
        None => {
            tracing::info!(file = %file.path.display(), "log file was truncated or replaced; reading it again");
            Ok(Resume::from_scratch(file, true, Some(checkpoint)))
        }
    }
}

/// The time shown for events of a log that carry none (and precede any that do): the time in
/// a Codex rollout's name, else when the log was last written, else now. It is kept in the
/// checkpoint, and event IDs never depend on it.
fn fallback_time(file: &LogFile, log: &dyn LogBytes) -> i64 {
    crate::harness::format(file.harness)
        .name_time(&file.path)
        .or_else(|| log.modified_ms())
        .unwrap_or_else(crate::text::now_ms)
}

/// One log being read.
struct Cursor<'f> {
    file: &'f LogFile,
    offset: u64,
    line_no: u32,
    generation: u32,
    builder: SessionBuilder,
    adapter: AdapterState,
    /// Where the bytes in `archive` start.
    archived_from: u64,
    archive: Vec<u8>,
}

impl Cursor<'_> {
    /// Moves past a line of `read` bytes, keeping them for the archive when archiving. A line
    /// too long to hold (`bytes` `None`) is archived as blanks of its length: it was skipped,
    /// and a re-parse of the archive skips it too.
    fn consume(&mut self, read: usize, bytes: Option<&[u8]>, archive: bool) {
        self.offset += read as u64;
        self.line_no += 1;
        if archive {
            match bytes {
                Some(bytes) => self.archive.extend_from_slice(bytes),
                None => {
                    self.archive.resize(self.archive.len() + read - 1, b' ');
                    self.archive.push(b'\n');
                }
            }
        }
    }

    fn read_record(
        &mut self,
        record: &Value,
        raw: &str,
        self_tools: &SelfTools,
        out: &mut AdapterOutput,
    ) {
        let cx = ReadContext {
            self_tools,
            subagent_file: self.file.subagent,
        };
        self.adapter.read(&cx, record, raw, out);
        if let Some(title) = out.title.take() {
            self.builder.set_harness_title(&title);
        }
        if let Some(summary) = out.summary.take() {
            self.builder.state.summary = summary;
        }
        if let Some(cwd) = out.cwd.take() {
            self.builder.state.cwd = cwd;
        }
        let state = &mut self.builder.state;
        if let Some(started) = out.started_at.take().filter(|t| *t > 0) {
            // Events without a time of their own show it, rather than the file's.
            state.fallback_ts = started;
            if state.started_at == 0 || started < state.started_at {
                state.started_at = started;
            }
        }
        if let Some(updated) = out.updated_at.take() {
            state.updated_at = state.updated_at.max(updated);
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error("the writer stopped")]
    WriterGone,
}

/// One line as [`Lines`] reads it.
struct Line<'a> {
    /// The line's bytes, with its newline; `None` when it is longer than allowed.
    bytes: Option<&'a [u8]>,
    /// Bytes read, the newline included.
    len: usize,
    /// It ends with a newline (else it is the last, unfinished, line).
    complete: bool,
}

/// Lines of at most `max` bytes, read without holding a longer one in memory.
struct Lines<'r> {
    reader: Box<dyn BufRead + 'r>,
    max: usize,
    buffer: Vec<u8>,
}

impl<'r> Lines<'r> {
    fn new(reader: Box<dyn BufRead + 'r>, max: usize) -> Self {
        Self {
            reader,
            max,
            buffer: Vec::new(),
        }
    }

    fn next(&mut self) -> io::Result<Option<Line<'_>>> {
        self.buffer.clear();
        let mut len = 0usize;
        let mut too_long = false;
        loop {
            let available = self.reader.fill_buf()?;
            if available.is_empty() {
                break;
            }
            let (take, done) = match memchr::memchr(b'\n', available) {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            if !too_long {
                if self.buffer.len() + take > self.max {
                    too_long = true;
                    self.buffer.clear();
                } else {
                    self.buffer.extend_from_slice(&available[..take]);
                }
            }
            len += take;
            self.reader.consume(take);
            if done {
                return Ok(Some(Line {
                    bytes: (!too_long).then_some(self.buffer.as_slice()),
                    len,
                    complete: true,
                }));
            }
        }
        if len == 0 {
            return Ok(None);
        }
        Ok(Some(Line {
            bytes: (!too_long).then_some(self.buffer.as_slice()),
            len,
            complete: false,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[u8], max: usize) -> Vec<(Option<Vec<u8>>, usize, bool)> {
        let mut lines = Lines::new(Box::new(text), max);
        let mut out = Vec::new();
        while let Some(line) = lines.next().unwrap() {
            out.push((line.bytes.map(<[u8]>::to_vec), line.len, line.complete));
        }
        out
    }

    #[test]
    fn test_lines_are_bounded_and_long_ones_skipped() {
        let text = b"short\nxxxxxxxxxxxxxxxxxxxx\nend";
        assert_eq!(
            lines(text, 10),
            [
                (Some(b"short\n".to_vec()), 6, true),
                (None, 21, true),
                (Some(b"end".to_vec()), 3, false),
            ]
        );
        assert_eq!(lines(b"", 10), []);
    }

    #[test]
    fn test_received_fingerprints_equal_the_disk_ones() {
        let content: Vec<u8> = (0..20_000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let path = std::env::temp_dir().join(format!("moraine-reader-{}", std::process::id()));
        std::fs::write(&path, &content).unwrap();
        let disk = DiskLog::open(&path, Harness::ClaudeCode).unwrap();
        for base in [0u64, 100, 5000, 20_000] {
            let received = ReceivedLog {
                base,
                tail: bytes::Bytes::new(),
                bytes: content[base as usize..].to_vec().into(),
                head: content[..4096].to_vec(),
                before: content[(base as usize).saturating_sub(4096)..base as usize].to_vec(),
            };
            assert_eq!(received.size(), disk.size());
            for offset in [base, base + 10, content.len() as u64] {
                assert_eq!(
                    received.fingerprint(offset).unwrap(),
                    disk.fingerprint(offset).unwrap(),
                    "base {base}, offset {offset}"
                );
            }
        }
        std::fs::remove_file(path).unwrap();
    }
}
