//! Reading log files into batches of rows, resuming from checkpoints.
//!
//! Runs on a blocking thread. Each file is read from its checkpoint (or from the start when it
//! is new, truncated or replaced), line by line; full batches go to the writer over a channel.
//! A batch carries, for every file it touches, the checkpoint at the point the batch ends, so a
//! checkpoint is written only together with the rows it covers.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc::Sender;

use super::adapter::AdapterOutput;
use super::claude::{Claude, ClaudeState};
use super::codex::{Codex, CodexState};
use super::draft::SelfTools;
use super::files::LogFile;
use super::redact::Redactor;
use super::session::{BuildSettings, SessionBuilder, SessionState};
use crate::rows::{CheckpointRow, EventRow, SessionRow, TurnRow};
use crate::tokenize::Indexer;
use crate::vocab::Harness;

/// Bytes hashed at each end of the consumed part of a file to recognise it again.
const FINGERPRINT_BYTES: u64 = 4096;

/// Rows to write together, in this order: retractions, events, turns, sessions, checkpoints.
#[derive(Debug, Default)]
pub struct Batch {
    pub retractions: Vec<Retraction>,
    pub events: Vec<EventRow>,
    pub turns: Vec<TurnRow>,
    pub sessions: Vec<SessionRow>,
    pub checkpoints: Vec<CheckpointRow>,
}

/// Rows to remove before a session is (re)read: everything from lines after `after_line`, and
/// turns after `keep_turns`. `after_line` 0 removes the whole session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retraction {
    pub session_key: u64,
    pub after_line: u32,
    pub keep_turns: u32,
}

/// What the writer already holds for a session.
#[derive(Debug, Clone, Default)]
pub struct Stored {
    pub checkpoint: Option<CheckpointRow>,
    /// The highest line number of any stored event of the session.
    pub max_line: Option<u32>,
}

/// The parser state saved in a checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FileState {
    adapter: AdapterState,
    session: SessionState,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
enum AdapterState {
    Codex(CodexState),
    Claude(ClaudeState),
}

/// Counts for the run summary.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counters {
    pub files_read: u64,
    pub files_unchanged: u64,
    pub files_reread: u64,
    pub files_unreadable: u64,
    pub lines: u64,
    pub malformed: u64,
    pub events: u64,
    pub sessions: u64,
    pub redactions: u64,
    pub bytes: u64,
}

pub struct Reader<'a> {
    pub batch_events: usize,
    pub build: BuildSettings,
    pub redactor: &'a Redactor,
    pub self_tools: &'a SelfTools,
    pub tx: Sender<Batch>,
    pub progress: &'a indicatif::ProgressBar,
    pub counters: Counters,
    batch: Batch,
    indexer: Indexer,
}

/// The writer has stopped (it failed); reading stops too.
#[derive(Debug, thiserror::Error)]
#[error("the writer stopped")]
pub struct WriterGone;

impl<'a> Reader<'a> {
    pub fn new(
        batch_events: usize,
        build: BuildSettings,
        redactor: &'a Redactor,
        self_tools: &'a SelfTools,
        tx: Sender<Batch>,
        progress: &'a indicatif::ProgressBar,
    ) -> Self {
        Self {
            batch_events,
            build,
            redactor,
            self_tools,
            tx,
            progress,
            counters: Counters::default(),
            batch: Batch::default(),
            indexer: Indexer::default(),
        }
    }

    /// Bytes that reading `file` will consume, for the progress bar.
    pub fn pending_bytes(file: &LogFile, stored: &Stored) -> u64 {
        match &stored.checkpoint {
            Some(cp) if cp.offset <= file.size => file.size - cp.offset,
            _ => file.size,
        }
    }

    /// Reads what is new in one file into the current batch.
    pub fn read_file(&mut self, file: &LogFile, stored: &Stored) -> Result<(), WriterGone> {
        match self.try_read_file(file, stored) {
            Ok(()) => Ok(()),
            Err(ReadError::Io(e)) => {
                tracing::warn!(file = %file.path.display(), error = %e, "cannot read log file; skipping it");
                self.counters.files_unreadable += 1;
                Ok(())
            }
            Err(ReadError::WriterGone) => Err(WriterGone),
        }
    }

    fn try_read_file(&mut self, file: &LogFile, stored: &Stored) -> Result<(), ReadError> {
        let handle = File::open(&file.path)?;
        let size = handle.metadata()?.len();
        let resume = self.resume_point(&handle, size, file, stored)?;
        let Some(Resume {
            offset,
            line_no,
            state,
            retraction,
        }) = resume
        else {
            self.counters.files_unchanged += 1;
            return Ok(());
        };
        if offset == 0 && stored.checkpoint.is_some() {
            self.counters.files_reread += 1;
        }
        self.counters.files_read += 1;
        if let Some(retraction) = retraction {
            self.batch.retractions.push(retraction);
        }
        let mut cursor = FileCursor {
            file,
            offset,
            line_no,
            builder: SessionBuilder::new(file.session_key, state.session, self.build.clone()),
            adapter: state.adapter,
            events_before: 0,
        };
        cursor.events_before = cursor.builder.state.events;

        let mut reader = BufReader::with_capacity(1 << 20, &handle);
        reader.seek(SeekFrom::Start(offset))?;
        let mut line = Vec::new();
        let mut out = AdapterOutput::default();
        loop {
            line.clear();
            let read = reader.read_until(b'\n', &mut line)?;
            if read == 0 {
                break;
            }
            let complete = line.last() == Some(&b'\n');
            // Validating is much faster than the lossy scan; invalid bytes are rare.
            let text = match std::str::from_utf8(&line) {
                Ok(text) => std::borrow::Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(&line),
            };
            let trimmed = text.trim();
            let parsed = serde_json::from_str::<Value>(trimmed);
            if !complete && parsed.is_err() {
                // A line still being written: leave it for the next run.
                break;
            }
            cursor.offset += read as u64;
            cursor.line_no += 1;
            self.counters.lines += 1;
            self.counters.bytes += read as u64;
            self.progress.inc(read as u64);
            if trimmed.is_empty() {
                continue;
            }
            let (redacted, redactions) = self.redactor.redact(trimmed);
            self.counters.redactions += redactions as u64;
            let record = match (redactions, parsed) {
                (0, Ok(value @ Value::Object(_))) => value,
                (_, Ok(Value::Object(_))) => match serde_json::from_str::<Value>(&redacted) {
                    Ok(value) => value,
                    Err(e) => {
                        self.malformed(file, cursor.line_no, &e.to_string());
                        continue;
                    }
                },
                (_, Ok(_)) => {
                    self.malformed(file, cursor.line_no, "not a JSON object");
                    continue;
                }
                (_, Err(e)) => {
                    self.malformed(file, cursor.line_no, &e.to_string());
                    continue;
                }
            };
            out.drafts.clear();
            cursor.read_record(&record, &redacted, self.self_tools, &mut out);
            for draft in out.drafts.drain(..) {
                cursor.builder.push(
                    draft,
                    cursor.line_no,
                    &mut self.indexer,
                    &mut self.batch.events,
                    &mut self.batch.turns,
                );
            }
            if self.batch.events.len() >= self.batch_events {
                self.cut(&cursor, &handle)?;
                self.send()?;
            }
        }
        self.cut(&cursor, &handle)?;
        if cursor.builder.state.events > cursor.events_before {
            self.counters.sessions += 1;
        }
        Ok(())
    }

    /// Where to continue reading `file`, or `None` when nothing changed.
    fn resume_point(
        &self,
        handle: &File,
        size: u64,
        file: &LogFile,
        stored: &Stored,
    ) -> Result<Option<Resume>, ReadError> {
        let fresh = || FileState {
            adapter: match file.harness {
                Harness::Codex => AdapterState::Codex(CodexState::default()),
                Harness::ClaudeCode => AdapterState::Claude(ClaudeState::default()),
            },
            session: SessionState::default(),
        };
        let from_scratch = |had_rows: bool| Resume {
            offset: 0,
            line_no: 0,
            state: fresh(),
            retraction: had_rows.then_some(Retraction {
                session_key: file.session_key,
                after_line: 0,
                keep_turns: 0,
            }),
        };
        let had_rows = stored.max_line.is_some();
        let Some(checkpoint) = &stored.checkpoint else {
            return Ok(Some(from_scratch(had_rows)));
        };
        let state: Option<FileState> = serde_json::from_str(&checkpoint.state).ok();
        let same_file = checkpoint.offset <= size
            && fingerprint(handle, checkpoint.offset)?
                == (checkpoint.head_hash, checkpoint.tail_hash);
        let Some(state) = state.filter(|_| same_file) else {
            tracing::info!(file = %file.path.display(), "log file was truncated or replaced; reading it again");
            return Ok(Some(from_scratch(true)));
        };
        // Rows past the checkpoint were written by a run that stopped before its checkpoint.
        let orphans = stored.max_line.is_some_and(|max| max > checkpoint.line_no);
        if checkpoint.offset == size && !orphans {
            return Ok(None);
        }
        let retraction = orphans.then_some(Retraction {
            session_key: file.session_key,
            after_line: checkpoint.line_no,
            keep_turns: state.session.turn.ordinal,
        });
        Ok(Some(Resume {
            offset: checkpoint.offset,
            line_no: checkpoint.line_no,
            state,
            retraction,
        }))
    }

    fn malformed(&mut self, file: &LogFile, line_no: u32, error: &str) {
        self.counters.malformed += 1;
        tracing::warn!(file = %file.path.display(), line = line_no, error, "skipping malformed line");
    }

    /// Adds the rows that describe `cursor`'s file as of now: its open turn, its session and
    /// its checkpoint.
    fn cut(&mut self, cursor: &FileCursor<'_>, handle: &File) -> Result<(), ReadError> {
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
        let (head_hash, tail_hash) = fingerprint(handle, cursor.offset)?;
        let state = FileState {
            adapter: cursor.adapter.clone(),
            session: cursor.builder.state.clone(),
        };
        self.batch.checkpoints.push(CheckpointRow {
            file_key: file.session_key,
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
        });
        Ok(())
    }

    fn send(&mut self) -> Result<(), ReadError> {
        let batch = std::mem::take(&mut self.batch);
        self.counters.events += batch.events.len() as u64;
        self.tx
            .blocking_send(batch)
            .map_err(|_| ReadError::WriterGone)
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

struct Resume {
    offset: u64,
    line_no: u32,
    state: FileState,
    retraction: Option<Retraction>,
}

/// One file being read.
struct FileCursor<'f> {
    file: &'f LogFile,
    offset: u64,
    line_no: u32,
    builder: SessionBuilder,
    adapter: AdapterState,
    events_before: u64,
}

impl FileCursor<'_> {
    fn read_record(
        &mut self,
        record: &Value,
        raw: &str,
        self_tools: &SelfTools,
        out: &mut AdapterOutput,
    ) {
        match &mut self.adapter {
            AdapterState::Codex(state) => {
                let mut codex = Codex {
                    state: std::mem::take(state),
                    self_tools,
                };
                codex.read(record, raw, out);
                *state = codex.state;
            }
            AdapterState::Claude(state) => {
                let mut claude = Claude {
                    state: std::mem::take(state),
                    self_tools,
                    subagent_file: self.file.subagent,
                };
                claude.read(record, raw, out);
                *state = claude.state;
            }
        }
        if let Some(title) = out.title.take() {
            self.builder.set_harness_title(&title);
        }
        if let Some(summary) = out.summary.take() {
            self.builder.state.summary = summary;
        }
        if let Some(cwd) = out.cwd.take() {
            self.builder.state.cwd = cwd;
        }
    }
}

#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("the writer stopped")]
    WriterGone,
}

/// Hashes of the first and the last (up to) 4 KiB before `offset`.
fn fingerprint(handle: &File, offset: u64) -> std::io::Result<(u64, u64)> {
    let head_len = offset.min(FINGERPRINT_BYTES);
    let mut head = vec![0; head_len as usize];
    handle.read_exact_at(&mut head, 0)?;
    let tail_len = offset.min(FINGERPRINT_BYTES);
    let mut tail = vec![0; tail_len as usize];
    handle.read_exact_at(&mut tail, offset - tail_len)?;
    Ok((
        xxhash_rust::xxh3::xxh3_64(&head),
        xxhash_rust::xxh3::xxh3_64(&tail),
    ))
}
