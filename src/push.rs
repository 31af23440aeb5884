//! `moraine-mcp push`: sends this machine's agent logs to a remote moraine-mcp's ingest API.
//!
//! For every log it asks the server where the log stands, checks that the local file still
//! starts with what was sent (else the file was replaced and is sent again from the start), and
//! sends what is new in bounded, zstd-compressed batches: many small logs (or one piece of a
//! large one) per request, three requests in flight, so the server writes in large batches as
//! local ingest does. Connection errors, 429 and 502-504 are retried with growing pauses (and
//! the server's `Retry-After`); a server that restarts mid-push is resumed from where it
//! stands. `--watch` keeps following the logs.

mod client;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::ingest::files::{self, LogFile};
use crate::ingest::push::contract::Outcome;
use crate::ingest::push::{Append, Appended, LogName, LogStatus};
use crate::ingest::reader::{DiskLog, FINGERPRINT_BYTES, LogBytes};
use crate::ingest::redact::Redactor;
use crate::vocab::Harness;
pub use client::Client;
use client::Failure;

/// Most logs asked about in one status request.
const STATUS_BATCH: usize = 1000;
/// The smallest request a 413 can shrink the request size to; a log is not cut into pieces
/// smaller than this to fill up a request.
const MIN_CHUNK_BYTES: usize = 64 * 1024;
/// Requests in flight at once: the server takes three ingest requests at a time by default.
/// Measured on two cores, three keep its parsing and its engine's inserts busy where two left
/// gaps (the same push took about a tenth longer), and four gained nothing more. A server that
/// takes fewer answers the extra ones `429`, and the push settles at what it takes (see
/// [`Sender`]); so does one whose uploads are too slow to finish three at a time.
const IN_FLIGHT: usize = 3;
/// Most logs in one request.
const BATCH_LOGS: usize = 256;
/// An answer this quick lets the next request be larger again (after one that was too slow).
const QUICK_ANSWER: Duration = Duration::from_secs(5);
/// With `--watch`, the first pause after the server refused the token; it doubles up to
/// [`REFUSED_PAUSE_MAX`].
const REFUSED_PAUSE: Duration = Duration::from_secs(60);
const REFUSED_PAUSE_MAX: Duration = Duration::from_secs(30 * 60);
/// Most log bytes in one request by default (before compression): fewer, larger requests
/// mean fewer, larger parts for the server's engine to merge.
pub const CHUNK_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// Log files or directories; none means the configured sources (where every harness keeps its logs).
    paths: Vec<PathBuf>,
    /// The moraine-mcp server, e.g. https://moraine.example.com.
    #[arg(long, env = "MORAINE_MCP_PUSH_SERVER")]
    server: String,
    /// A token of the server with the ingest scope.
    #[arg(long, env = "MORAINE_MCP_PUSH_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The harness that wrote the given files (default: detect).
    #[arg(long, value_enum)]
    harness: Option<Harness>,
    /// Source name, for a server without tokens (with tokens, the token's source is used).
    #[arg(long)]
    source: Option<String>,
    /// Keep following the logs (new files, appends) until stopped.
    #[arg(long)]
    watch: bool,
    /// With --watch: seconds between looks at the logs.
    #[arg(long, default_value_t = 2)]
    interval: u64,
    /// Most log bytes sent in one request (before compression).
    #[arg(long, default_value_t = CHUNK_BYTES)]
    chunk_bytes: usize,
    /// How long to keep retrying an unreachable or overloaded server, in seconds.
    #[arg(long, default_value_t = 600)]
    retry_for: u64,
    /// Hide the progress bar.
    #[arg(long)]
    no_progress: bool,
}

/// What a push did.
#[derive(Debug, Default, Clone)]
pub struct PushSummary {
    pub files: usize,
    pub sent: usize,
    pub unchanged: usize,
    pub replaced: usize,
    pub failed: usize,
    pub bytes: u64,
    pub compressed: u64,
    pub events: u64,
    pub sessions: u64,
    pub malformed: u64,
    pub redactions: u64,
    /// Requests answered busy after which their worker gave its logs to the others and stopped.
    pub gave_way: usize,
    /// Requests the server could not answer in time, sent again smaller.
    pub shrunk: usize,
    /// Bytes still to send when the push stopped early.
    pub left: u64,
    /// Events the server found dated later than its clock: this machine's clock is ahead.
    pub future_events: u64,
    pub elapsed: Duration,
}

impl PushSummary {
    fn add(&mut self, appended: &Appended) {
        self.events += appended.events;
        self.sessions += appended.sessions;
        self.malformed += appended.malformed;
        self.redactions += appended.redactions;
        self.future_events += appended.future_events;
    }
}

impl std::fmt::Display for PushSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seconds = self.elapsed.as_secs_f64().max(1e-9);
        write!(
            f,
            "{} files ({} sent, {} unchanged, {} sent again from the start, {} failed); \
             {:.1} MiB as {:.1} MiB compressed, {} events written, {} sessions touched, \
             {} malformed lines, {} redactions; in {:.2} s ({:.0} events/s)",
            self.files,
            self.sent,
            self.unchanged,
            self.replaced,
            self.failed,
            self.bytes as f64 / (1024.0 * 1024.0),
            self.compressed as f64 / (1024.0 * 1024.0),
            self.events,
            self.sessions,
            self.malformed,
            self.redactions,
            seconds,
            self.events as f64 / seconds,
        )?;
        if self.future_events > 0 {
            write!(
                f,
                "; {} events dated after the server's clock (this machine's clock is ahead?)",
                self.future_events
            )?;
        }
        Ok(())
    }
}

/// Runs `moraine-mcp push`.
pub async fn run(args: PushArgs, config: Config) -> anyhow::Result<ExitCode> {
    // `--watch` never gives up on a busy or unreachable server; one push gives up after
    // `--retry-for`.
    let retry_for = if args.watch {
        Duration::MAX
    } else {
        Duration::from_secs(args.retry_for)
    };
    let client = Client::new(
        &args.server,
        args.token.as_deref(),
        args.source.as_deref(),
        retry_for,
    )?;
    if !args.watch {
        let logs = discover(&args, &config);
        if logs.is_empty() {
            eprintln!("no session logs found");
            return Ok(ExitCode::SUCCESS);
        }
        return match push_logs(&client, &logs, args.chunk_bytes, !args.no_progress).await {
            Ok(summary) => {
                println!("pushed {summary}");
                Ok(if summary.failed > 0 {
                    ExitCode::FAILURE
                } else {
                    ExitCode::SUCCESS
                })
            }
            Err(error) => match error.downcast::<PushStopped>() {
                Ok(stopped) => {
                    println!("pushed {}", stopped.summary);
                    eprintln!("error: push stopped: {stopped}");
                    Ok(ExitCode::FAILURE)
                }
                Err(error) => Err(error),
            },
        };
    }
    watch(&client, &args, &config).await
}

/// The logs to push: the given paths, or the configured sources.
fn discover(args: &PushArgs, config: &Config) -> Vec<LogFile> {
    let (logs, problems) = if args.paths.is_empty() {
        files::from_sources(&config.ingest.sources)
    } else {
        files::from_paths(&args.paths, args.harness, None)
    };
    for problem in &problems {
        eprintln!("warning: {problem}");
    }
    logs
}

/// Pushes every log once.
pub async fn push_logs(
    client: &Client,
    logs: &[LogFile],
    chunk_bytes: usize,
    show_progress: bool,
) -> anyhow::Result<PushSummary> {
    let started = Instant::now();
    let mut summary = PushSummary {
        files: logs.len(),
        ..PushSummary::default()
    };
    let statuses = match statuses(client, logs).await {
        Ok(statuses) => statuses,
        Err(failure) => {
            summary.left = logs.iter().map(|log| log.size).sum();
            summary.elapsed = started.elapsed();
            return Err(PushStopped { summary, failure }.into());
        }
    };
    let total: u64 = logs
        .iter()
        .zip(&statuses)
        .map(|(log, status)| log.size.saturating_sub(status.received))
        .sum();
    let progress = crate::ingest::progress_bar(total, show_progress);
    let mut jobs = VecDeque::new();
    for (log, status) in logs.iter().zip(statuses) {
        match Job::plan(log, status) {
            Ok(Some(job)) => {
                summary.sent += 1;
                summary.replaced += usize::from(job.replace);
                jobs.push_back(job);
            }
            Ok(None) => summary.unchanged += 1,
            Err(error) => {
                summary.failed += 1;
                eprintln!("warning: {}: {error:#}", log.path.display());
            }
        }
    }
    let sender = Sender {
        client,
        progress: &progress,
        queue: Mutex::new(jobs),
        summary: Mutex::new(summary),
        workers: AtomicUsize::new(IN_FLIGHT),
    };
    let workers = (0..IN_FLIGHT).map(|_| sender.work(chunk_bytes));
    let finished = futures_util::future::join_all(workers).await;
    progress.finish_and_clear();
    let stopped = finished.into_iter().find_map(Result::err);
    let left: u64 = sender
        .queue
        .lock()
        .expect("push state")
        .iter()
        .map(|job| job.size - job.offset)
        .sum();
    let mut summary = sender.summary.into_inner().expect("push state");
    summary.elapsed = started.elapsed();
    summary.left = left;
    match stopped {
        // How far it got, with why it stopped.
        Some(failure) => Err(PushStopped { summary, failure }.into()),
        None => Ok(summary),
    }
}

/// A push that stopped before every log was sent: what it did, and why it stopped.
#[derive(Debug, thiserror::Error)]
#[error("{} ({} MiB still to send; run push again to go on from there)", failure_text(.failure), .summary.left >> 20)]
pub struct PushStopped {
    pub summary: PushSummary,
    failure: Failure,
}

impl PushStopped {
    /// The server refused the token.
    pub fn token_refused(&self) -> bool {
        matches!(self.failure, Failure::Refused(_))
    }
}

fn failure_text(failure: &Failure) -> String {
    match failure {
        Failure::Refused(error) => format!(
            "the server refused the token: {error:#} (check --token / MORAINE_MCP_PUSH_TOKEN)"
        ),
        Failure::Fatal(error) | Failure::Log(error) => format!("{error:#}"),
        Failure::GaveWay => "the server was busy".into(),
        Failure::Slow => "the server did not answer in time".into(),
    }
}

/// Keeps pushing until stopped: looks at the known logs' sizes every `interval`, and for new
/// logs every tenth look. Only logs that grew (or shrank) are sent; the server is asked where
/// a log stands only when it is first seen or after a refusal.
async fn watch(client: &Client, args: &PushArgs, config: &Config) -> anyhow::Result<ExitCode> {
    let interval = Duration::from_secs(args.interval.max(1));
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    eprintln!("pushing to {} until stopped", args.server);
    // The size each known log had when it was last pushed in full.
    let mut pushed: HashMap<PathBuf, u64> = HashMap::new();
    let mut logs: Vec<LogFile> = Vec::new();
    let mut refused_pause = REFUSED_PAUSE;
    for round in 0u64.. {
        if round % 10 == 0 {
            logs = discover(args, config);
        }
        let due: Vec<LogFile> = logs
            .iter()
            .filter_map(|log| {
                let size = std::fs::metadata(&log.path).ok()?.len();
                (pushed.get(&log.path) != Some(&size)).then(|| LogFile {
                    size,
                    ..log.clone()
                })
            })
            .collect();
        let mut pause = interval;
        if !due.is_empty() {
            match push_logs(client, &due, args.chunk_bytes, false).await {
                Ok(summary) => {
                    refused_pause = REFUSED_PAUSE;
                    if summary.events > 0 || summary.failed > 0 {
                        eprintln!("pushed {summary}");
                    }
                    for log in &due {
                        pushed.insert(log.path.clone(), log.size);
                    }
                }
                Err(error) => match error.downcast::<PushStopped>() {
                    // A revoked or mistyped token is not retried every few seconds: each try
                    // waits longer, up to half an hour, and says why.
                    Ok(stopped) if stopped.token_refused() => {
                        eprintln!(
                            "error: {stopped}; trying again in {} min",
                            refused_pause.as_secs() / 60
                        );
                        pause = refused_pause;
                        refused_pause = (refused_pause * 2).min(REFUSED_PAUSE_MAX);
                    }
                    Ok(stopped) => eprintln!("warning: push stopped, going on: {stopped}"),
                    Err(error) => eprintln!("warning: push failed, going on: {error:#}"),
                },
            }
        }
        tokio::select! {
            _ = &mut stop => break,
            _ = term.recv() => break,
            () = tokio::time::sleep(pause) => {}
        }
    }
    eprintln!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// Where each log stands on the server.
async fn statuses(client: &Client, logs: &[LogFile]) -> Result<Vec<LogStatus>, Failure> {
    let mut out = Vec::with_capacity(logs.len());
    for batch in logs.chunks(STATUS_BATCH) {
        let names: Vec<LogName> = batch.iter().map(name_of).collect();
        let statuses = client
            .status(&names)
            .await
            .map_err(|failure| match failure {
                Failure::Refused(error) => Failure::Refused(error),
                other => Failure::Fatal(
                    other
                        .into_error()
                        .context("cannot ask the server where the logs stand"),
                ),
            })?;
        if statuses.len() != names.len() {
            return Err(Failure::Fatal(anyhow::anyhow!(
                "the server answered for {} of {} logs",
                statuses.len(),
                names.len()
            )));
        }
        out.extend(statuses);
    }
    Ok(out)
}

fn name_of(log: &LogFile) -> LogName {
    LogName {
        harness: log.harness,
        path: log.path.to_string_lossy().into_owned(),
        // Discovery made it a session of its own under the ID it names: said, so the server
        // decides alike whatever order the logs reach it in.
        session: log.subagent.then(|| log.native_id.clone()),
    }
}

/// A log with bytes to send.
struct Job {
    path: PathBuf,
    name: LogName,
    local: DiskLog,
    /// The next byte to send.
    offset: u64,
    /// The local size when the push began: bytes written since wait for the next push.
    size: u64,
    /// The server holds another file under this name: start over.
    replace: bool,
}

impl Job {
    /// What to send of `log`, given where it stands on the server; `None` when nothing.
    fn plan(log: &LogFile, status: LogStatus) -> anyhow::Result<Option<Self>> {
        let local = DiskLog::open(&log.path, log.harness)?;
        let size = sendable_size(&local)?;
        let replace = !still_starts_with_what_was_sent(&local, &status)?;
        let offset = if replace { 0 } else { status.received };
        Ok((offset < size).then(|| Self {
            path: log.path.clone(),
            name: name_of(log),
            local,
            offset,
            size,
            replace,
        }))
    }

    /// Takes the server's word on where the log stands after a refusal.
    fn resync(&mut self, status: &LogStatus) -> std::io::Result<()> {
        self.replace = !still_starts_with_what_was_sent(&self.local, status)?;
        self.offset = if self.replace { 0 } else { status.received };
        Ok(())
    }
}

/// Sends the queued logs in batches, [`IN_FLIGHT`] requests at a time (workers on one task;
/// the locks are never held across a wait). A log being sent belongs to one worker until it
/// is done, so its pieces arrive in order.
///
/// A worker whose request is answered busy (`429`: the server takes fewer requests at once, or
/// other laptops push too; `502`-`504`: among others, a request timed out, as slow uploads do
/// when several share a thin uplink) gives its logs back and stops, unless it is the last one:
/// a push settles at what the server and the link take instead of sending a request again and
/// again to be refused.
struct Sender<'a> {
    client: &'a Client,
    progress: &'a indicatif::ProgressBar,
    queue: Mutex<VecDeque<Job>>,
    summary: Mutex<PushSummary>,
    /// Workers not yet ended.
    workers: AtomicUsize,
}

impl Sender<'_> {
    /// Sends batches until the queue is empty; an error is fatal to the whole push. Requests
    /// get smaller when the server cannot answer them within its time limit, and larger again
    /// (up to `chunk_bytes`) while answers come quickly.
    async fn work(&self, chunk_bytes: usize) -> Result<(), Failure> {
        let mut max_bytes = chunk_bytes;
        // Logs this worker continues: those sent in part, and those refused and asked about.
        let mut mine: Vec<Job> = Vec::new();
        loop {
            let batch = self.fill(&mut mine, max_bytes);
            if batch.is_empty() {
                // Found the queue empty and ends, in one step (no other worker runs between).
                self.workers.fetch_sub(1, Ordering::SeqCst);
                return Ok(());
            }
            let appends: Vec<Append<'_>> = batch
                .iter()
                .map(|(job, bytes)| Append {
                    log: job.name.clone(),
                    offset: job.offset,
                    replace: job.replace,
                    bytes,
                })
                .collect();
            let sent_at = Instant::now();
            let may_shrink = max_bytes > MIN_CHUNK_BYTES;
            let answer = self
                .client
                .batch(&appends, &|| self.retire(), may_shrink)
                .await;
            drop(appends);
            let jobs = batch.into_iter().map(|(job, _)| job);
            match answer {
                Ok((outcomes, compressed)) => {
                    self.summary.lock().expect("push state").compressed += compressed;
                    for (job, outcome) in jobs.zip(outcomes) {
                        if let Some(job) = self.settle(job, outcome).await? {
                            mine.push(job);
                        }
                    }
                    if sent_at.elapsed() < QUICK_ANSWER {
                        max_bytes = (max_bytes * 2).min(chunk_bytes);
                    }
                }
                Err(Failure::Log(error)) if is_too_large(&error) && max_bytes > MIN_CHUNK_BYTES => {
                    max_bytes /= 2;
                    mine.extend(jobs);
                }
                Err(Failure::Slow) => {
                    max_bytes = (max_bytes / 2).max(MIN_CHUNK_BYTES);
                    self.summary.lock().expect("push state").shrunk += 1;
                    mine.extend(jobs);
                }
                Err(Failure::Log(error)) => {
                    for job in jobs {
                        self.fail(&job, &error);
                    }
                }
                Err(Failure::GaveWay) => {
                    // Nothing of these logs is in flight: another worker goes on with them, in
                    // order. One is still running: this one stopped only if it was not the last.
                    let mut queue = self.queue.lock().expect("push state");
                    for job in mine.into_iter().chain(jobs).rev() {
                        queue.push_front(job);
                    }
                    self.summary.lock().expect("push state").gave_way += 1;
                    return Ok(());
                }
                Err(fatal) => {
                    // Given back, so the summary says what was left.
                    let mut queue = self.queue.lock().expect("push state");
                    for job in mine.into_iter().chain(jobs).rev() {
                        queue.push_front(job);
                    }
                    return Err(fatal);
                }
            }
        }
    }

    /// Whether a worker answered busy stops: yes, unless it is the last one running.
    fn retire(&self) -> bool {
        self.workers
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n > 1).then(|| n - 1)
            })
            .is_ok()
    }

    /// The next request's logs and their bytes: the worker's own logs first, then queued
    /// ones, up to `max_bytes` and [`BATCH_LOGS`]. A log larger than a request is cut at a line
    /// end and its rest sent next.
    fn fill(&self, mine: &mut Vec<Job>, max_bytes: usize) -> Vec<(Job, Vec<u8>)> {
        let mut batch = Vec::new();
        let mut room = max_bytes;
        while batch.len() < BATCH_LOGS {
            let Some(job) = mine
                .pop()
                .or_else(|| self.queue.lock().expect("push state").pop_front())
            else {
                break;
            };
            let left = (job.size - job.offset) as usize;
            // A log that would fit whole in a request of its own waits for the next one rather
            // than being cut: the server reads back a cut log's tail to go on parsing it.
            let wait = left > room && (left <= max_bytes || room < MIN_CHUNK_BYTES);
            if !batch.is_empty() && wait {
                mine.push(job);
                break;
            }
            match read_chunk(&job.local, job.offset, job.size, room.max(1)) {
                Ok(bytes) => {
                    room = room.saturating_sub(bytes.len());
                    batch.push((job, bytes));
                }
                Err(error) => self.fail(&job, &error.into()),
            }
            if room == 0 {
                break;
            }
        }
        batch
    }

    /// Takes one log's outcome: the job again when more of it is to be sent.
    async fn settle(&self, mut job: Job, outcome: Outcome) -> Result<Option<Job>, Failure> {
        match outcome {
            Outcome::Appended(appended) => {
                let sent = appended.received.saturating_sub(job.offset);
                self.progress.inc(sent);
                let mut summary = self.summary.lock().expect("push state");
                summary.bytes += sent;
                summary.add(&appended);
                job.offset = appended.received;
                job.replace = false;
            }
            Outcome::Refused(refusal) if refusal.is_mismatch() => {
                // The server holds something else: ask again, and start over if needed.
                let status = match self.client.status(std::slice::from_ref(&job.name)).await {
                    Ok(mut statuses) => statuses.pop(),
                    Err(fatal @ (Failure::Fatal(_) | Failure::Refused(_))) => return Err(fatal),
                    Err(failure) => {
                        self.fail(&job, &failure.into_error());
                        return Ok(None);
                    }
                };
                let Some(status) = status else {
                    self.fail(&job, &anyhow::anyhow!("no status for the log"));
                    return Ok(None);
                };
                if let Err(error) = job.resync(&status) {
                    self.fail(&job, &error.into());
                    return Ok(None);
                }
            }
            Outcome::Refused(refusal) => {
                self.fail(
                    &job,
                    &anyhow::anyhow!("the server refused it: {}", refusal.message),
                );
                return Ok(None);
            }
        }
        Ok((job.offset < job.size).then_some(job))
    }

    fn fail(&self, job: &Job, error: &anyhow::Error) {
        self.summary.lock().expect("push state").failed += 1;
        eprintln!("warning: {}: {error:#}", job.path.display());
    }
}

/// Whether the local file still starts with the bytes the server holds (their fingerprint).
fn still_starts_with_what_was_sent(local: &DiskLog, status: &LogStatus) -> std::io::Result<bool> {
    let (Some(head), Some(tail)) = (&status.head_hash, &status.tail_hash) else {
        return Ok(status.received == 0);
    };
    if status.received > local.size() {
        return Ok(false);
    }
    let (local_head, local_tail) = masked_fingerprint(local, status.received)?;
    Ok(format!("{local_head:016x}") == *head && format!("{local_tail:016x}") == *tail)
}

/// The file's fingerprint at `at` as the server computes it: XXH3 of the first and of the
/// last (up to) 4 KiB before `at`, over the bytes with credentials masked, as its archive
/// holds them.
fn masked_fingerprint(local: &DiskLog, at: u64) -> std::io::Result<(u64, u64)> {
    let take = at.min(FINGERPRINT_BYTES);
    let head = masked_range(local, 0, take, at)?;
    let tail = masked_range(local, at - take, at, at)?;
    Ok((
        xxhash_rust::xxh3::xxh3_64(&head),
        xxhash_rust::xxh3::xxh3_64(&tail),
    ))
}

/// The bytes `[from, to)` of `local` (which ends at `end`) masked as the archive masks them:
/// line by line, so the whole lines around the range are read — a little beyond it first, up
/// to 1 MiB beyond it when a line is longer.
fn masked_range(local: &DiskLog, from: u64, to: u64, end: u64) -> std::io::Result<Vec<u8>> {
    static MASKER: std::sync::LazyLock<Redactor> = std::sync::LazyLock::new(Redactor::builtin);
    for reach in [64 << 10, 1 << 20] {
        let start = from.saturating_sub(reach);
        let stop = to.saturating_add(reach).min(end);
        let bytes = read_range(local, start, stop)?;
        let (from_at, to_at) = ((from - start) as usize, (to - start) as usize);
        let line_start = memchr::memrchr(b'\n', &bytes[..from_at]).map(|i| i + 1);
        let line_end = match to_at {
            0 => Some(0),
            _ => memchr::memchr(b'\n', &bytes[to_at - 1..]).map(|i| to_at + i),
        };
        // A line that begins or ends beyond what was read: read further, or take what is read.
        let whole = (line_start.is_some() || start == 0) && (line_end.is_some() || stop == end);
        if whole || reach == 1 << 20 {
            let (line_start, line_end) = (line_start.unwrap_or(0), line_end.unwrap_or(bytes.len()));
            let (masked, _) = MASKER.mask(&bytes[line_start..line_end]);
            return Ok(masked[from_at - line_start..to_at - line_start].to_vec());
        }
    }
    unreachable!("the last reach returns")
}

fn read_range(local: &DiskLog, from: u64, to: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = vec![0; (to - from) as usize];
    local.from(from)?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// How much of a log to send: all of it, but for an unterminated last line of a file written
/// in the last minute — the agent is still writing it, and a line sent in two pieces would be
/// masked in two pieces (a credential across the cut would stay in the archive).
fn sendable_size(local: &DiskLog) -> std::io::Result<u64> {
    let size = local.size();
    let written_lately = local
        .modified_ms()
        .is_some_and(|at| crate::text::now_ms() - at < 60_000);
    if size == 0 || !written_lately {
        return Ok(size);
    }
    let from = size.saturating_sub(1 << 20);
    let tail = read_range(local, from, size)?;
    if tail.last() == Some(&b'\n') {
        return Ok(size);
    }
    Ok(match memchr::memrchr(b'\n', &tail) {
        Some(at) => from + at as u64 + 1,
        // One line longer than what is looked at: sent in pieces all the same.
        None if from > 0 => size,
        None => 0,
    })
}

/// Up to `max` bytes of the file from `offset`, cut after the last newline when there is one
/// (so the server has whole lines to parse), but never empty.
fn read_chunk(local: &DiskLog, offset: u64, size: u64, max: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let len = (size - offset).min(max as u64) as usize;
    let mut buffer = vec![0; len];
    local.from(offset)?.read_exact(&mut buffer)?;
    if offset + (len as u64) < size
        && let Some(last) = memchr::memrchr(b'\n', &buffer)
    {
        buffer.truncate(last + 1);
    }
    Ok(buffer)
}

fn is_too_large(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<client::Refused>()
        .is_some_and(|r| r.status == 413)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_a_worker_answered_busy_stops_unless_it_is_the_last() {
        let client = Client::new("http://127.0.0.1:9", None, None, Duration::ZERO).unwrap();
        let progress = indicatif::ProgressBar::hidden();
        let sender = Sender {
            client: &client,
            progress: &progress,
            queue: Mutex::new(VecDeque::new()),
            summary: Mutex::new(PushSummary::default()),
            workers: AtomicUsize::new(IN_FLIGHT),
        };
        let stopped = std::iter::from_fn(|| sender.retire().then_some(())).count();
        assert_eq!(stopped, IN_FLIGHT - 1);
        assert_eq!(sender.workers.load(Ordering::SeqCst), 1);
        assert!(!sender.retire());
    }

    #[test]
    fn test_chunks_end_at_a_newline_unless_at_the_end() {
        let path = std::env::temp_dir().join(format!("moraine-push-{}", std::process::id()));
        std::fs::write(&path, b"aaaa\nbbbb\ncc").unwrap();
        let local = DiskLog::open(&path, Harness::ClaudeCode).unwrap();
        assert_eq!(read_chunk(&local, 0, 12, 8).unwrap(), b"aaaa\n");
        assert_eq!(read_chunk(&local, 5, 12, 100).unwrap(), b"bbbb\ncc");
        assert_eq!(read_chunk(&local, 10, 12, 1).unwrap(), b"c");
        // A line longer than the chunk goes in pieces.
        assert_eq!(read_chunk(&local, 0, 12, 3).unwrap(), b"aaa");
        // Just written: its unterminated last line waits for its end.
        assert_eq!(sendable_size(&local).unwrap(), 10);
        std::fs::write(&path, b"aaaa\nbbbb\ncc\n").unwrap();
        assert_eq!(
            sendable_size(&DiskLog::open(&path, Harness::ClaudeCode).unwrap()).unwrap(),
            13
        );
        std::fs::write(&path, b"cc").unwrap();
        assert_eq!(
            sendable_size(&DiskLog::open(&path, Harness::ClaudeCode).unwrap()).unwrap(),
            0
        );
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn test_masked_fingerprint_is_the_archives() {
        let path = std::env::temp_dir().join(format!("moraine-mask-{}", std::process::id()));
        let mut log = Vec::new();
        for n in 0..400 {
            log.extend(format!("{{\"n\":{n},\"out\":\"key AKIAFAKEFAKEFAKE{n:04}\"}}\n").bytes());
        }
        std::fs::write(&path, &log).unwrap();
        let local = DiskLog::open(&path, Harness::ClaudeCode).unwrap();
        let masked = Redactor::builtin().mask(&log).0.into_owned();
        let archive = crate::ingest::reader::ReceivedLog {
            base: 0,
            tail: bytes::Bytes::new(),
            bytes: masked.into(),
            head: Vec::new(),
            before: Vec::new(),
        };
        // At a line end, as the server stands after each append.
        let at = log.iter().rposition(|&b| b == b'\n').unwrap() as u64 + 1;
        let middle = log[..log.len() / 2]
            .iter()
            .rposition(|&b| b == b'\n')
            .unwrap() as u64
            + 1;
        for offset in [at, middle, 4096 + 17] {
            assert_eq!(
                masked_fingerprint(&local, offset).unwrap(),
                archive.fingerprint(offset).unwrap(),
                "{offset}"
            );
        }
        std::fs::remove_file(path).unwrap();
    }
}
