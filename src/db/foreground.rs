//! Searches first: while tool calls run, ingest writes go one at a time, each after a pause.
//!
//! On a small server a full-speed push (parsing, inserts and the merges they cause) takes
//! the cores searches need, and lowering its CPU priority barely helps: the engine's threads
//! at nice 10 still took most of a core while a client searched. So ingest gives way by doing
//! less while searches run: before each write, it waits for a pause in the calls, or at most
//! twice as long as the previous such write took (up to [`MAX_PAUSE`]), so a steady stream of
//! calls leaves ingest about a third of the time, and never stops it. With no call running, a
//! write goes ahead at once (those already queued behind a paced one still go one at a time).

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// Calls count as running this long after the last one ended: a client's next call follows
/// its previous answer within a few milliseconds.
const QUIET: Duration = Duration::from_millis(50);
/// A paced write waits at most this multiple of the previous paced write's duration.
const PAUSE_PER_WRITE: u32 = 2;
/// Bounds of that wait: enough to let a short search through, never long enough to stall
/// a client (whose requests time out after minutes).
const MIN_PAUSE: Duration = Duration::from_millis(50);
const MAX_PAUSE: Duration = Duration::from_secs(5);
/// How often a waiting write looks at the calls again.
const POLL: Duration = Duration::from_millis(10);

/// The tool calls running on this server, and the pacing of ingest writes around them.
pub(crate) struct Foreground {
    epoch: Instant,
    running: AtomicUsize,
    /// When the last call ended, in ms since `epoch`, plus one (0: none has).
    last_end_ms: AtomicU64,
    /// Paced writes go one at a time; this holds how long the last one took.
    paced: tokio::sync::Mutex<Duration>,
}

/// Marks a call as running until dropped (also when the call is abandoned).
pub(crate) struct Running<'a>(&'a Foreground);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let ended = self.0.epoch.elapsed().as_millis() as u64 + 1;
        self.0.last_end_ms.fetch_max(ended, Ordering::SeqCst);
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How an ingest write went through [`Foreground::write`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paced {
    /// No call was running: it went ahead at once.
    No,
    /// It gave way to calls for this long first.
    Waited(Duration),
}

impl Foreground {
    pub(crate) fn new() -> Self {
        Self {
            epoch: Instant::now(),
            running: AtomicUsize::new(0),
            last_end_ms: AtomicU64::new(0),
            paced: tokio::sync::Mutex::new(Duration::ZERO),
        }
    }

    /// Marks a tool call as running.
    pub(crate) fn call(&self) -> Running<'_> {
        self.running.fetch_add(1, Ordering::SeqCst);
        Running(self)
    }

    /// Whether a call is running or ended less than [`QUIET`] ago.
    fn busy(&self) -> bool {
        if self.running.load(Ordering::SeqCst) > 0 {
            return true;
        }
        match self.last_end_ms.load(Ordering::SeqCst) {
            0 => false,
            ended => self.epoch.elapsed().as_millis() + 1 < u128::from(ended) + QUIET.as_millis(),
        }
    }

    /// Runs `write` (one ingest write), after the calls when they are running: see the
    /// module's documentation.
    pub(crate) async fn write<T>(&self, write: impl Future<Output = T>) -> (T, Paced) {
        if !self.busy() {
            return (write.await, Paced::No);
        }
        // What a write waited includes its turn behind other paced writes.
        let queued = Instant::now();
        let mut last = self.paced.lock().await;
        let pause = (*last * PAUSE_PER_WRITE).clamp(MIN_PAUSE, MAX_PAUSE);
        let pausing = Instant::now();
        while self.busy() && pausing.elapsed() < pause {
            tokio::time::sleep(POLL).await;
        }
        let waited = queued.elapsed();
        let started = Instant::now();
        let out = write.await;
        *last = started.elapsed();
        (out, Paced::Waited(waited))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write that takes `took` (of the test's paused clock).
    async fn write_taking(took: Duration) {
        tokio::time::sleep(took).await;
    }

    /// How long a write that must have given way waited.
    fn wait_of(paced: Paced) -> Duration {
        match paced {
            Paced::Waited(waited) => waited,
            Paced::No => panic!("the write did not wait"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn test_a_write_with_no_call_running_goes_ahead_at_once() {
        let foreground = Foreground::new();
        let (_, paced) = foreground.write(async {}).await;
        assert_eq!(paced, Paced::No);
    }

    #[tokio::test(start_paused = true)]
    async fn test_a_write_waits_for_the_running_call_and_the_quiet_after_it() {
        let foreground = std::sync::Arc::new(Foreground::new());
        let call = foreground.call();
        // A first paced write of 300 ms: the next may wait up to 600.
        foreground
            .write(write_taking(Duration::from_millis(300)))
            .await;
        let writer = {
            let foreground = foreground.clone();
            tokio::spawn(async move { foreground.write(async {}).await.1 })
        };
        // The call ends after 20 ms: the write goes once the calls have been quiet for 50.
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(call);
        let paced = writer.await.unwrap();
        let waited = wait_of(paced);
        let quiet_after_the_call = Duration::from_millis(20) + QUIET;
        assert!(waited >= quiet_after_the_call, "{waited:?}");
        assert!(waited <= quiet_after_the_call + POLL, "{waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn test_under_steady_calls_writes_take_at_most_a_third_of_the_time() {
        let foreground = Foreground::new();
        let _call = foreground.call();
        // First paced write: the shortest pause, then 300 ms of writing.
        let (_, first) = foreground
            .write(write_taking(Duration::from_millis(300)))
            .await;
        let waited = wait_of(first);
        assert!(
            waited >= MIN_PAUSE && waited <= MIN_PAUSE + POLL,
            "{waited:?}"
        );
        // The next waits twice that write, as the call is still running.
        let (_, second) = foreground.write(async {}).await;
        let waited = wait_of(second);
        assert!(waited >= Duration::from_millis(600), "{waited:?}");
        assert!(waited <= Duration::from_millis(600) + POLL, "{waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn test_a_write_never_waits_longer_than_the_longest_pause() {
        let foreground = Foreground::new();
        let _call = foreground.call();
        foreground
            .write(write_taking(Duration::from_secs(60)))
            .await;
        let (_, paced) = foreground.write(async {}).await;
        let waited = wait_of(paced);
        assert!(
            waited >= MAX_PAUSE && waited <= MAX_PAUSE + POLL,
            "{waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn test_an_abandoned_call_stops_counting() {
        let foreground = Foreground::new();
        {
            let _call = foreground.call();
            assert!(foreground.busy());
        }
        assert!(foreground.busy(), "quiet only some time after the call");
        tokio::time::sleep(QUIET).await;
        assert!(!foreground.busy());
    }
}
