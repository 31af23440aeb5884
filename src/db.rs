//! The ClickHouse handle shared by every MCP session and by ingest.
//!
//! One `clickhouse::Client` (one HTTP connection pool) sits behind a `deadpool` pool of query
//! slots: a query first takes a slot, and a caller that cannot get one within the queue timeout
//! gets [`DbError::Busy`] (only the write gate's lease statements and the once-a-minute read of
//! the store's size skip the slots, a few at a time per process; see [`Query::unqueued`]). Tool
//! queries run read-only with a server-side time limit taken from the caller's deadline. Values
//! always travel as server-side parameters (`{name:Type}`).

pub mod cluster;
mod foreground;
pub mod gate;

use std::sync::Arc;
use std::time::{Duration, Instant};

use deadpool::managed::{self, Metrics as PoolMetrics, Pool, RecycleResult};
use serde::Serialize;

use crate::config::{ClickHouseConfig, Compression};
use crate::metrics::Metrics;
use foreground::{Foreground, Paced};

/// A failure talking to ClickHouse, classified the way callers must react to it.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("all query slots are busy")]
    Busy,
    #[error("the query ran past its deadline")]
    Deadline,
    #[error("clickhouse is unreachable: {0}")]
    Unavailable(String),
    #[error("clickhouse hit a resource limit: {0}")]
    ResourceExhausted(String),
    #[error("clickhouse rejected the query: {0}")]
    Server(String),
    /// ClickHouse found the statement itself wrong: a bug in this service, not an outage.
    #[error("clickhouse rejected the statement: {0}")]
    Statement(String),
    #[error("unexpected clickhouse response: {0}")]
    Protocol(String),
    /// A schema migration is running: writes wait for it (see [`gate`]).
    #[error("a schema migration is running")]
    Migrating,
}

impl DbError {
    /// A short label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Busy => "busy",
            Self::Deadline => "deadline",
            Self::Unavailable(_) => "unavailable",
            Self::ResourceExhausted(_) => "resource_exhausted",
            Self::Server(_) => "server",
            Self::Statement(_) => "statement",
            Self::Protocol(_) => "protocol",
            Self::Migrating => "migrating",
        }
    }

    /// Classifies a client error by transport failure or server exception code.
    pub fn from_clickhouse(error: clickhouse::error::Error) -> Self {
        use clickhouse::error::Error;
        match error {
            Error::Network(e) => Self::Unavailable(e.to_string()),
            Error::TimedOut => Self::Deadline,
            Error::BadResponse(message) => {
                let first_line = message.lines().next().unwrap_or("").to_owned();
                match server_code(&message) {
                    // TIMEOUT_EXCEEDED, QUERY_WAS_CANCELLED
                    Some(159 | 394) => Self::Deadline,
                    // TOO_MANY_SIMULTANEOUS_QUERIES; on a cluster, a quorum insert while the
                    // previous one is under way (UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE), a
                    // sequentially consistent read on a replica behind (REPLICA_IS_NOT_IN_QUORUM)
                    Some(202 | 286 | 289) => Self::Busy,
                    // TOO_FEW_LIVE_REPLICAS
                    Some(285) => Self::Unavailable(first_line),
                    // MEMORY_LIMIT_EXCEEDED, TOO_MANY_ROWS, TOO_MANY_BYTES, TOO_MANY_ROWS_OR_BYTES
                    Some(241 | 158 | 307 | 396) => Self::ResourceExhausted(first_line),
                    // Syntax, identifier, type, alias and parameter errors.
                    Some(6 | 36 | 43 | 47 | 53 | 62 | 179 | 184 | 215 | 386 | 456 | 457) => {
                        Self::Statement(first_line)
                    }
                    None if message.starts_with("5") || message.starts_with("4") => {
                        Self::Unavailable(first_line)
                    }
                    _ => Self::Server(first_line),
                }
            }
            other => Self::Protocol(other.to_string()),
        }
    }
}

impl DbError {
    /// ClickHouse answered that the database or a table does not exist: the store has no
    /// schema (a dropped database, one never migrated).
    pub fn schema_missing(&self) -> bool {
        matches!(self, Self::Server(message) | Self::Statement(message)
            if matches!(server_code(message), Some(60 | 81)))
    }
}

/// The exception code in a ClickHouse error text (`Code: 60. DB::Exception: …`).
fn server_code(message: &str) -> Option<u32> {
    let at = message.find("Code: ")?;
    let digits: String = message[at + 6..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

tokio::task_local! {
    /// When the current tool call stops waiting for query slots (see [`Db::admit_call`]).
    static QUEUE_DEADLINE: Instant;
}

/// Permission to run one query. The client's HTTP pool has no bound on connections, so the
/// number of these is what bounds concurrent queries (and sockets) against ClickHouse, but for
/// the few that skip them (see [`Query::unqueued`]).
#[derive(Debug)]
pub struct QuerySlot;

/// Creates query slots; they hold no connection state, so recycling always succeeds.
struct Slots;

impl managed::Manager for Slots {
    type Type = QuerySlot;
    type Error = std::convert::Infallible;

    async fn create(&self) -> Result<QuerySlot, Self::Error> {
        Ok(QuerySlot)
    }

    async fn recycle(
        &self,
        _slot: &mut QuerySlot,
        _metrics: &PoolMetrics,
    ) -> RecycleResult<Self::Error> {
        Ok(())
    }
}

/// The shared ClickHouse handle. Cheap to clone.
#[derive(Clone)]
pub struct Db {
    client: clickhouse::Client,
    slots: Pool<Slots>,
    query_timeout: Duration,
    metrics: Metrics,
    /// Admission of tool calls (see [`Db::admit_call`]).
    calls: Arc<Admission>,
    /// The tool calls running, which ingest writes give way to (see [`Db::paced_write`]).
    foreground: Arc<Foreground>,
    /// The cluster the schema lives on (`clickhouse.cluster`), if any.
    cluster: Option<Arc<cluster::Cluster>>,
    /// Whether ClickHouse answers, as [`Db::watch_health`] last saw it (always, where nothing
    /// watches): while it does not, statements fail at once instead of waiting out their
    /// deadline.
    answering: Arc<tokio::sync::watch::Sender<bool>>,
    /// This process's writes and the schema migrations (see [`gate`]).
    writes: Arc<gate::WriterGate>,
}

/// Tool calls running, and waiting to run.
struct Admission {
    running: tokio::sync::Semaphore,
    waiting: std::sync::atomic::AtomicUsize,
    max_waiting: usize,
}

impl Admission {
    fn new(slots: usize, max_waiting: usize) -> Self {
        Self {
            running: tokio::sync::Semaphore::new(slots),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            max_waiting,
        }
    }

    /// A place in the queue, or `None` when it is full; given back when dropped (also when
    /// the call is abandoned while it waits).
    fn queue(&self) -> Option<Waiting<'_>> {
        use std::sync::atomic::Ordering::SeqCst;
        let claimed = self
            .waiting
            .fetch_update(SeqCst, SeqCst, |n| (n < self.max_waiting).then(|| n + 1));
        // Built only when claimed: its drop gives the place back.
        claimed.is_ok().then(|| Waiting(&self.waiting))
    }
}

struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Whether a statement may be abandoned when ClickHouse stops answering: reads may; writes
/// are left to finish, since one abandoned after it was sent may still land.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Abandon {
    WhenDown,
    Never,
}

impl Db {
    /// Builds the client and the slot pool. Connects lazily.
    pub fn new(config: &ClickHouseConfig, metrics: Metrics) -> Self {
        let mut client = base_client(config).with_database(&config.database);
        let cluster = cluster::Cluster::configured(config);
        if cluster.is_some() {
            client = client
                // A session's rows share a shard, so a subquery over sessions, turns or events
                // inside a query over them reads the shard's own rows (never per-shard index
                // statistics: those are always read, summed, by a statement of their own).
                .with_setting("distributed_product_mode", "local")
                // A statement naming one session (`session_key = …`, `sess = …`) goes to the
                // shard that holds it, not to every shard.
                .with_setting("optimize_skip_unused_shards", "1")
                // An insert returns once its rows are on their shards, so a checkpoint written
                // after it never runs ahead of what is stored.
                .with_setting("distributed_foreground_insert", "1");
        }
        let slots = Pool::builder(Slots)
            .max_size(config.max_concurrent_queries)
            .wait_timeout(Some(Duration::from_millis(config.queue_timeout_ms)))
            .runtime(deadpool::Runtime::Tokio1)
            .build()
            .expect("a runtime is set");
        Self {
            client,
            slots,
            query_timeout: Duration::from_millis(config.query_timeout_ms),
            metrics,
            calls: Arc::new(Admission::new(
                config.concurrent_calls(),
                config.max_waiting_calls,
            )),
            foreground: Arc::new(Foreground::new()),
            answering: Arc::new(tokio::sync::watch::Sender::new(true)),
            cluster: cluster.map(Arc::new),
            writes: Arc::new(gate::WriterGate::new()),
        }
    }

    /// This handle with `other`'s tool calls as its foreground: two services of one process
    /// (the benchmark's) that share the engine pace their ingest as one server does.
    #[cfg(feature = "bench")]
    pub(crate) fn sharing_foreground_of(mut self, other: &Self) -> Self {
        self.foreground = other.foreground.clone();
        self
    }

    /// Runs `write` (one ingest write: a batch's statements), giving way to running tool
    /// calls first (see [`foreground`]).
    pub async fn paced_write<T>(&self, write: impl std::future::Future<Output = T>) -> T {
        let (out, paced) = self.foreground.write(write).await;
        if let Paced::Waited(waited) = paced {
            self.metrics.observe_paced_write(waited.as_secs_f64());
        }
        out
    }

    /// Lets one write (a batch, a `forget`, a statistics repair) start once no schema
    /// migration runs; it runs while the returned permit lives. See [`gate`]. Never called
    /// while the caller holds a permit: a migration would wait for that permit, and the
    /// permit's holder for it.
    pub async fn enter_write(
        &self,
        when_migrating: gate::WhenMigrating,
    ) -> Result<gate::WritePermit, DbError> {
        gate::enter(&self.writes, self, when_migrating).await
    }

    /// Gives this process's write lease up when it is done writing (see [`gate::release`]).
    pub async fn release_writes(&self) {
        gate::release(&self.writes, self).await;
    }

    /// The same handle (slots, metrics, health) on another database of the server: a
    /// cluster's shard tables.
    pub fn with_database(&self, database: &str) -> Self {
        let mut db = self.clone();
        db.client = db.client.clone().with_database(database);
        db
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The client, for writers (ingest) that manage their own batching.
    pub fn client(&self) -> &clickhouse::Client {
        &self.client
    }

    /// Publishes the slot pool's state to the metrics (called when `/metrics` is scraped).
    pub fn export_pool_status(&self) {
        self.metrics.set_pool(self.slots.status());
    }

    /// Runs `work` (one tool call) as an admitted call. At most
    /// [`ClickHouseConfig::concurrent_calls`] run at once (by default one per core), and at
    /// most `max_waiting_calls` more wait (within the queue timeout) for one of them to end; a
    /// call beyond that is answered busy at once. Under overload the excess is refused rather
    /// than everyone slowed down. The call's queries together then wait at most what is left of the queue
    /// timeout for slots, however many statements it runs.
    pub async fn admit_call<T, E, F>(&self, work: F) -> Result<T, E>
    where
        F: std::future::Future<Output = Result<T, E>>,
        E: From<DbError>,
    {
        let started = Instant::now();
        let wait = self.slots.timeouts().wait.unwrap_or_default();
        let _running = match self.calls.running.try_acquire() {
            Ok(permit) => permit,
            Err(_) => {
                let Some(_waiting) = self.calls.queue() else {
                    return Err(DbError::Busy.into());
                };
                match tokio::time::timeout(wait, self.calls.running.acquire()).await {
                    Ok(Ok(permit)) => permit,
                    _ => return Err(DbError::Busy.into()),
                }
            }
        };
        let _call = self.foreground.call();
        let left = wait.saturating_sub(started.elapsed());
        QUEUE_DEADLINE.scope(Instant::now() + left, work).await
    }

    /// Starts a read-only query named `name` (its label in metrics).
    pub fn read(&self, name: &'static str, sql: &str) -> Query {
        Query {
            name,
            inner: self.client.query(sql).with_setting("readonly", "2"),
            abandon: Abandon::WhenDown,
            queued: true,
        }
    }

    /// Starts a statement that may write (DDL, DELETE, INSERT … SELECT).
    pub fn write(&self, name: &'static str, sql: &str) -> Query {
        Query {
            name,
            inner: self.client.query(sql),
            abandon: Abandon::Never,
            queued: true,
        }
    }

    /// `DELETE FROM table WHERE condition`. On a cluster it runs on the shards' own tables (a
    /// `Distributed` table cannot delete), on every server, each evaluating `condition`
    /// against its own replica: a condition with a subquery must not be sent to a cluster
    /// (see [`Db::on_cluster`]), since a replica behind on replication would answer it
    /// differently.
    pub fn delete(&self, name: &'static str, table: &str, condition: &str) -> Query {
        match &self.cluster {
            None => self.write(name, &format!("DELETE FROM {table} WHERE {condition}")),
            Some(cluster) => self
                .write(name, &cluster.delete(table, condition))
                // Every server runs the delete (a lightweight delete is not among the ON
                // CLUSTER statements run once per shard): each waits for its own replica, and a
                // server that is down runs it from the queue when it is back instead of
                // failing the write.
                .setting("lightweight_deletes_sync", "1")
                .setting("distributed_ddl_output_mode", "throw_only_active"),
        }
    }

    /// Whether the schema lives on a cluster.
    pub fn on_cluster(&self) -> bool {
        self.cluster.is_some()
    }

    /// The cluster the schema lives on (`clickhouse.cluster`), if any.
    pub(crate) fn cluster(&self) -> Option<&cluster::Cluster> {
        self.cluster.as_deref()
    }

    /// The handle for a writer that reads what it wrote (checkpoints, stored events): on a
    /// cluster, reads and inserts go to the first replica of each shard that answers, not to
    /// any, so a read never meets a replica that has not yet received a write.
    pub fn for_writes(&self) -> Self {
        let mut db = self.clone();
        if self.cluster.is_some() {
            db.client = db
                .client
                .clone()
                .with_setting("load_balancing", "in_order")
                // Also for the shard of the server it is connected to, which would otherwise
                // be read locally, whichever replica the writes went to.
                .with_setting("prefer_localhost_replica", "0");
        }
        db
    }

    /// The deadline of a query with no caller deadline: now plus the configured query timeout.
    pub fn default_deadline(&self) -> Instant {
        Instant::now() + self.query_timeout
    }

    /// Runs one query under a slot (unless `queued` is false), the deadline and the metrics.
    async fn run<T>(
        &self,
        name: &'static str,
        deadline: Instant,
        abandon: Abandon,
        queued: bool,
        query: impl std::future::Future<Output = Result<T, clickhouse::error::Error>>,
    ) -> Result<T, DbError> {
        let started = Instant::now();
        let remaining = deadline.saturating_duration_since(started);
        if remaining.is_zero() {
            return Err(DbError::Deadline);
        }
        if !*self.answering.borrow() {
            self.metrics.observe_query(name, 0.0, Some("unavailable"));
            return Err(not_answering());
        }
        let _slot = match queued {
            true => Some(self.slot(name, started, deadline).await?),
            false => None,
        };
        let _in_flight = self.metrics.query_in_flight();
        let mut answering = self.answering.subscribe();
        let stops_answering = async {
            // A closed channel never says "down": only a watch that saw it does.
            if abandon == Abandon::Never || answering.wait_for(|up| !*up).await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        let result = tokio::select! {
            answered = tokio::time::timeout_at(deadline.into(), query) => match answered {
                Ok(Ok(value)) => Ok(value),
                Ok(Err(e)) => Err(DbError::from_clickhouse(e)),
                Err(_) => Err(DbError::Deadline),
            },
            () = stops_answering => Err(not_answering()),
        };
        let kind = result.as_ref().err().map(DbError::kind);
        self.metrics
            .observe_query(name, started.elapsed().as_secs_f64(), kind);
        result
    }

    /// A query slot, waited for at most the configured queue timeout, cut short by the
    /// deadline and by what the current tool call has left of its queue wait.
    async fn slot(
        &self,
        name: &'static str,
        started: Instant,
        deadline: Instant,
    ) -> Result<managed::Object<Slots>, DbError> {
        let mut timeouts = self.slots.timeouts();
        let call_wait = QUEUE_DEADLINE
            .try_with(|until| until.saturating_duration_since(started))
            .unwrap_or(Duration::MAX);
        let remaining = deadline.saturating_duration_since(started);
        timeouts.wait = timeouts.wait.map(|wait| wait.min(remaining).min(call_wait));
        match self.slots.timeout_get(&timeouts).await {
            Ok(slot) => Ok(slot),
            Err(managed::PoolError::Timeout(_)) if Instant::now() >= deadline => {
                Err(DbError::Deadline)
            }
            Err(managed::PoolError::Timeout(_)) => {
                self.metrics
                    .observe_query(name, started.elapsed().as_secs_f64(), Some("busy"));
                Err(DbError::Busy)
            }
            Err(e) => Err(DbError::Protocol(e.to_string())),
        }
    }

    /// Inserts `rows` into `table` in one request, under a slot and the general query timeout.
    pub async fn insert<T>(
        &self,
        name: &'static str,
        table: &str,
        rows: &[T],
        settings: &[(&str, &str)],
    ) -> Result<(), DbError>
    where
        T: clickhouse::Row + Serialize + for<'r> clickhouse::Row<Value<'r> = T>,
    {
        if rows.is_empty() {
            return Ok(());
        }
        let deadline = self.default_deadline();
        let client = &self.client;
        self.run(name, deadline, Abandon::Never, true, async move {
            let mut insert = client.insert::<T>(table).await?;
            for (key, value) in settings {
                insert = insert.with_setting(*key, *value);
            }
            for row in rows {
                insert.write(row).await?;
            }
            insert.end().await
        })
        .await
    }

    /// Pings ClickHouse every `every` until `stop`: when two pings in a row get no answer
    /// within `timeout`, new statements fail at once (`backend_failure`) and reads in flight
    /// are abandoned (writes in flight finish), until a ping is answered again. Without this watch a stopped or frozen engine holds every
    /// call until its deadline.
    pub async fn watch_health(
        self,
        every: Duration,
        timeout: Duration,
        stop: tokio_util::sync::CancellationToken,
    ) {
        // Two pings missed in a row, not one slow answer, mean it stopped answering.
        let mut missed = 0;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
            let answered = match self.ping(timeout).await {
                // An exception is an answer.
                Ok(()) | Err(DbError::Server(_)) => Ok(()),
                Err(e) => Err(e),
            };
            let was = *self.answering.borrow();
            match answered {
                Ok(()) => {
                    missed = 0;
                    if !was {
                        tracing::info!("clickhouse answers again");
                        self.answering.send_replace(true);
                    }
                }
                Err(error) => {
                    missed += 1;
                    if was && missed >= 2 {
                        tracing::warn!(%error, "clickhouse stopped answering; statements fail at once until it is back");
                        self.answering.send_replace(false);
                    }
                }
            }
        }
    }

    /// `SELECT 1` within `timeout`, without taking a slot (health checks must not queue).
    pub async fn ping(&self, timeout: Duration) -> Result<(), DbError> {
        let query = self.client.query("SELECT 1").with_setting("readonly", "2");
        match tokio::time::timeout(timeout, query.fetch_one::<u8>()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(DbError::from_clickhouse(e)),
            Err(_) => Err(DbError::Deadline),
        }
    }

    /// The applied schema version, without taking a query slot: health checks must answer even
    /// when every slot is busy. Also serves as the liveness probe.
    pub async fn schema_version_unqueued(&self) -> Result<u32, DbError> {
        self.client
            .query("SELECT max(version) FROM schema_migrations")
            .with_setting("readonly", "2")
            .fetch_one::<u32>()
            .await
            .map_err(DbError::from_clickhouse)
    }

    /// Pings until ClickHouse answers or `wait` has passed, backing off between attempts.
    pub async fn wait_until_ready(&self, wait: Duration) -> Result<(), DbError> {
        let give_up = Instant::now() + wait;
        let mut pause = Duration::from_millis(100);
        loop {
            match self.ping(Duration::from_secs(2)).await {
                // An exception (say, the database is not created yet) means the server answered.
                Ok(()) | Err(DbError::Server(_)) => return Ok(()),
                Err(e) if Instant::now() + pause >= give_up => return Err(e),
                Err(e) => {
                    tracing::info!(error = %e, retry_in_ms = pause.as_millis() as u64, "waiting for clickhouse");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
            }
        }
    }
}

/// A client with the configured URL, credentials and connect timeout, but no database.
pub fn base_client(config: &ClickHouseConfig) -> clickhouse::Client {
    let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
    connector.set_connect_timeout(Some(Duration::from_millis(config.connect_timeout_ms)));
    connector.set_keepalive(Some(Duration::from_secs(60)));
    connector.set_nodelay(true);
    let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(2))
        .pool_max_idle_per_host(config.max_concurrent_queries.max(4))
        .build(connector);
    let compression = match config.compression {
        Compression::None => clickhouse::Compression::None,
        Compression::Lz4 => clickhouse::Compression::Lz4,
    };
    clickhouse::Client::with_http_client(http)
        .with_compression(compression)
        .with_url(&config.url)
        .with_user(&config.user)
        .with_password(&config.password)
}

/// Splices fixed SQL fragments into a statement template at `«name»` markers. The guillemets
/// cannot be mistaken for ClickHouse's `{name:Type}` parameters, which carry every value a
/// client sends; fragments are constants of this service, never client text.
pub fn splice(template: &str, fragments: &[(&str, &str)]) -> String {
    let mut sql = template.to_owned();
    for (name, fragment) in fragments {
        let marker = format!("«{name}»");
        debug_assert!(sql.contains(&marker), "no marker {marker} in the template");
        sql = sql.replace(&marker, fragment);
    }
    debug_assert!(!sql.contains('«'), "unfilled marker in {sql}");
    sql
}

/// A query being built: its metrics name and the client query.
pub struct Query {
    name: &'static str,
    inner: clickhouse::query::Query,
    abandon: Abandon,
    /// Whether it waits for a query slot (see [`Query::unqueued`]).
    queued: bool,
}

impl Query {
    /// Binds a server-side parameter `{name:Type}`.
    pub fn param(mut self, name: &str, value: impl Serialize) -> Self {
        self.inner = self.inner.param(name, value);
        self
    }

    pub fn setting(mut self, name: &str, value: impl Into<String>) -> Self {
        self.inner = self.inner.with_setting(name, value.into());
        self
    }

    /// Runs without waiting for a query slot: the write gate's lease statements (a renewal
    /// every few seconds per process; while a migration and writers wait for each other, a
    /// look every half second) run on time however busy the slots are with tool calls, and the
    /// store's size, read once a minute, never holds a slot a tool call waits for.
    pub fn unqueued(mut self) -> Self {
        self.queued = false;
        self
    }

    /// On a cluster, an insert returns once most replicas hold it (one at a time: another
    /// meanwhile is refused, busy), and a read sees every such insert (or fails): what the
    /// write gate's leases need to be seen through every server.
    pub fn consistent(self, db: &Db) -> Self {
        if !db.on_cluster() {
            return self;
        }
        self.setting("insert_quorum", "auto")
            .setting("insert_quorum_parallel", "0")
            .setting("select_sequential_consistency", "1")
    }

    /// Fetches every row, within `deadline`.
    pub async fn fetch_all<T>(self, db: &Db, deadline: Instant) -> Result<Vec<T>, DbError>
    where
        T: clickhouse::RowOwned + clickhouse::RowRead,
    {
        self.run(db, deadline, |query| query.fetch_all::<T>()).await
    }

    /// Fetches at most one row, within `deadline`.
    pub async fn fetch_optional<T>(self, db: &Db, deadline: Instant) -> Result<Option<T>, DbError>
    where
        T: clickhouse::RowOwned + clickhouse::RowRead,
    {
        self.run(db, deadline, |query| query.fetch_optional::<T>())
            .await
    }

    /// Runs a statement, within `deadline`.
    pub async fn execute(self, db: &Db, deadline: Instant) -> Result<(), DbError> {
        self.run(db, deadline, |query| query.execute()).await
    }

    /// Runs `how` on the query, limited to `deadline`, through [`Db::run`].
    async fn run<T, F>(
        self,
        db: &Db,
        deadline: Instant,
        how: impl FnOnce(clickhouse::query::Query) -> F,
    ) -> Result<T, DbError>
    where
        F: std::future::Future<Output = Result<T, clickhouse::error::Error>>,
    {
        let query = how(with_time_limit(self.inner, deadline));
        db.run(self.name, deadline, self.abandon, self.queued, query)
            .await
    }
}

fn not_answering() -> DbError {
    DbError::Unavailable("clickhouse is not answering health checks".into())
}

/// Makes ClickHouse stop the query at the deadline too, so an abandoned query frees the server.
fn with_time_limit(query: clickhouse::query::Query, deadline: Instant) -> clickhouse::query::Query {
    let seconds = deadline
        .saturating_duration_since(Instant::now())
        .as_secs_f64()
        .max(0.001);
    query.with_setting("max_execution_time", format!("{seconds:.3}"))
}

/// Drops the configured database and everything in it, if it exists (on a client without a
/// current database); on a cluster, the shards' database too, on every server.
pub async fn drop_database(config: &ClickHouseConfig) -> Result<(), clickhouse::error::Error> {
    let Some(cluster) = cluster::Cluster::configured(config) else {
        return base_client(config)
            .query("DROP DATABASE IF EXISTS {db:Identifier}")
            .param("db", &config.database)
            .execute()
            .await;
    };
    for database in [&cluster.database, &cluster.local] {
        base_client(config)
            .query(&format!(
                "DROP DATABASE IF EXISTS {database} ON CLUSTER {} SYNC",
                cluster.name
            ))
            .execute()
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_splice_fills_markers_and_keeps_parameters() {
        let sql = splice(
            "SELECT x FROM t WHERE a = {a:UInt8} «scope» ORDER BY x «dir»",
            &[("scope", "AND b = {b:String}"), ("dir", "DESC")],
        );
        assert_eq!(
            sql,
            "SELECT x FROM t WHERE a = {a:UInt8} AND b = {b:String} ORDER BY x DESC"
        );
        assert_eq!(splice("SELECT «x»", &[("x", "")]), "SELECT ");
    }

    #[test]
    fn test_errors_are_classified_by_code() {
        let bad =
            |m: &str| DbError::from_clickhouse(clickhouse::error::Error::BadResponse(m.into()));
        assert!(matches!(
            bad("Code: 159. DB::Exception: Timeout exceeded"),
            DbError::Deadline
        ));
        assert!(matches!(
            bad("Code: 241. DB::Exception: Memory limit"),
            DbError::ResourceExhausted(_)
        ));
        assert!(matches!(
            bad("Code: 60. DB::Exception: Table x does not exist"),
            DbError::Server(_)
        ));
        assert!(matches!(
            bad("503 Service Unavailable"),
            DbError::Unavailable(_)
        ));
        assert_eq!(server_code("x Code: 202. y"), Some(202));
        assert!(matches!(
            bad("Code: 286. DB::Exception: Quorum for previous write has not been satisfied yet"),
            DbError::Busy
        ));
    }
}
