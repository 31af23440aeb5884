//! The write gate: a schema migration runs while no writer writes, and one migration at a time.
//!
//! A migration may copy a table into a new one and swap their names; a row written to the old
//! table during the copy would be left behind. So writers (ingest, pushes, `reindex`,
//! `forget`) and `migrate` meet in the `write_gate` table, by leases that run out unless
//! renewed:
//!
//! - A writing process holds a *writer lease* while it writes, renewed by a keeper task that
//!   also looks for migrators. Once it sees one, it starts no new write, keeps renewing while
//!   the running ones finish, then gives its lease up; it writes again once no migrator lease
//!   is live. (Between two of the keeper's looks, writes start under the lease without
//!   looking: a migration waits for that lease anyway.)
//! - `migrate` takes a migrator lease and goes on only if it is the only live one (otherwise it
//!   gives it up and tries again a little later), then waits until no writer lease is live, and
//!   checks before each statement that its own lease is still live.
//!
//! Each side writes its lease and only then looks for the other's, so of two that start at
//! once, the one that looks second sees the first. A lease's rows are ordered by a sequence
//! number its holder chooses, not by time; liveness is judged by the server's clock, and a
//! lease that ran out is never renewed. A process that dies holding a lease holds the other
//! side up for at most [`LEASE`].
//!
//! The search log's inserts are not gated: no migration copies its tables. One that does must
//! gate their flush first.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use tokio::time::Instant;

use super::{Db, DbError};

/// How long a lease lasts unless renewed.
const LEASE: Duration = Duration::from_secs(60);

/// How often leases are renewed (and a writer looks for migrators).
const RENEW_EVERY: Duration = Duration::from_secs(5);
/// A writer that has not written for this long gives its lease up.
const IDLE: Duration = Duration::from_secs(10);
/// How often a side that waits for the other looks again.
const POLL: Duration = Duration::from_millis(500);

/// Until when a lease of length `lease` renewed at `at` may be relied on: a writer starts a
/// write under it, and a migration runs a statement, only while a third of it is left by their
/// own reckoning (the keeper renews it while writes run).
fn usable_until(at: Instant, lease: Duration) -> Instant {
    at + lease - lease / 3
}

/// The gate's table. Created with `schema_migrations`, before any migration (see
/// [`crate::migrate`]); its rows live a day.
pub const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS write_gate \
    (role Enum8('writer' = 1, 'migrator' = 2), holder UInt64, seq UInt64, \
     until DateTime64(6, 'UTC'), label String, written DateTime64(6, 'UTC') DEFAULT now64(6)) \
    ENGINE = MergeTree ORDER BY (role, holder, seq) \
    TTL toDateTime(written) + INTERVAL 1 DAY";

/// Takes a lease, live for `{lease_ms}` from now.
const TAKE: &str = "INSERT INTO write_gate (role, holder, seq, until, label) \
    SELECT {role:String}, {holder:UInt64}, {seq:UInt64}, now64(6) + toIntervalMillisecond({lease_ms:UInt32}), \
           {label:String}";

/// Renews a lease, only if it is still live: one that ran out stays out. (One group: a row,
/// or none.)
const RENEW: &str = "INSERT INTO write_gate (role, holder, seq, until, label) \
    SELECT {role:String}, {holder:UInt64}, {seq:UInt64}, now64(6) + toIntervalMillisecond({lease_ms:UInt32}), \
           {label:String} \
    FROM write_gate WHERE role = {role:String} AND holder = {holder:UInt64} \
    GROUP BY holder HAVING argMax(until, seq) > now64(6)";

/// Gives a lease up.
const RELEASE: &str = "INSERT INTO write_gate (role, holder, seq, until, label) \
    SELECT {role:String}, {holder:UInt64}, {seq:UInt64}, toDateTime64(0, 6, 'UTC'), {label:String}";

/// The holders of live leases of a role, and what they are.
const LIVE_LEASES: &str = "SELECT holder, argMax(label, seq) FROM write_gate WHERE role = {role:String} \
    GROUP BY holder HAVING argMax(until, seq) > now64(6) ORDER BY holder";

/// The two sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Writer,
    Migrator,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Self::Writer => "writer",
            Self::Migrator => "migrator",
        }
    }
}

/// One holder's lease rows.
struct Holder {
    role: Role,
    id: u64,
    seq: AtomicU64,
    lease: Duration,
    /// What holds it, for an operator reading who a migration waits for.
    label: &'static str,
}

impl Holder {
    fn new(role: Role, lease: Duration) -> Self {
        Self {
            role,
            id: random(),
            seq: AtomicU64::new(0),
            lease,
            label: process_label(),
        }
    }

    /// Writes one of [`TAKE`], [`RENEW`] or [`RELEASE`] with the next sequence number, so the
    /// last one sent is the one that counts, whichever lands last. A busy answer is tried
    /// again a few times (on a cluster, a quorum insert refuses while another is under way).
    async fn write(&self, db: &Db, statement: &str) -> Result<(), DbError> {
        let seq = self.seq.fetch_add(1, SeqCst) + 1;
        let mut tries = 0;
        loop {
            let written = db
                .write("write_gate_lease", statement)
                .param("role", self.role.as_str())
                .param("holder", self.id)
                .param("seq", seq)
                .param("lease_ms", self.lease.as_millis() as u32)
                .param("label", self.label)
                .consistent(db)
                .unqueued()
                .execute(db, db.default_deadline())
                .await;
            match written {
                Err(DbError::Busy) if tries < 5 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(50 + random() % 200)).await;
                }
                other => return other,
            }
        }
    }

    /// Renews the lease; `false` when it had run out (and stays out).
    async fn renew(&self, db: &Db) -> Result<bool, DbError> {
        self.write(db, RENEW).await?;
        Ok(live(db, self.role).await?.contains(&self.id))
    }
}

/// The holders of live leases of `role`.
pub async fn live(db: &Db, role: Role) -> Result<Vec<u64>, DbError> {
    Ok(live_labelled(db, role)
        .await?
        .into_iter()
        .map(|(holder, _)| holder)
        .collect())
}

/// The holders of live leases of `role`, each with what it is (`serve on host-a, pid 812`).
pub async fn live_labelled(db: &Db, role: Role) -> Result<Vec<(u64, String)>, DbError> {
    db.read("write_gate_live", LIVE_LEASES)
        .param("role", role.as_str())
        .consistent(db)
        .unqueued()
        .fetch_all(db, db.default_deadline())
        .await
}

/// This process, as a lease's label: its command, host and process ID (worked out once).
fn process_label() -> &'static str {
    static LABEL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LABEL.get_or_init(describe_process)
}

fn describe_process() -> String {
    // The first argument that names a command that writes or migrates (options come before
    // it); arguments that are not text are skipped.
    let commands = [
        "up", "serve", "ingest", "reindex", "forget", "migrate", "bench",
    ];
    let command = std::env::args_os()
        .skip(1)
        .filter_map(|arg| arg.into_string().ok())
        .find(|arg| commands.contains(&arg.as_str()))
        .unwrap_or_else(|| "moraine-mcp".into());
    // Linux names the host here; elsewhere the shell's variable, if exported.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|host| host.trim().to_owned())
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "an unnamed host".into());
    format!("{command} on {host}, pid {}", std::process::id())
}

/// Runs `step` again while ClickHouse does not answer, for up to [`LEASE`]: a wait that may
/// last long is not ended by a moment's outage.
async fn patiently<T, F>(mut step: impl FnMut() -> F) -> Result<T, DbError>
where
    F: std::future::Future<Output = Result<T, DbError>>,
{
    let started = Instant::now();
    loop {
        match step().await {
            Err(error @ (DbError::Busy | DbError::Deadline | DbError::Unavailable(_)))
                if started.elapsed() < LEASE =>
            {
                tracing::warn!(%error, "the write gate cannot reach clickhouse; trying again");
                tokio::time::sleep(POLL).await;
            }
            other => return other,
        }
    }
}

/// What a writer does when a migration is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenMigrating {
    /// Waits for it to end (a local ingest).
    Wait,
    /// Fails at once with [`DbError::Migrating`] (a push request, which its client retries).
    Refuse,
}

/// This process's side of the gate as a writer. Shared by every clone of a [`Db`].
pub(crate) struct WriterGate {
    holder: Holder,
    /// Writes in progress.
    running: AtomicUsize,
    /// A migration was seen: no write starts until it is over.
    fenced: AtomicBool,
    /// The lease as this process knows it: `None` when surely not held, else when it stops
    /// being safe to start a write under it (in the past while it is being taken or given up:
    /// held, maybe, but not usable). Taken, renewed and given up under this lock; writes are
    /// counted only under it, so none starts while the keeper waits for them to end.
    lease: tokio::sync::Mutex<Option<Instant>>,
    /// When the last write ended.
    last_write: std::sync::Mutex<Instant>,
    /// Whether the keeper task runs.
    keeper: AtomicBool,
}

/// Permission for one write: the lease is kept while it lives.
pub struct WritePermit {
    gate: Arc<WriterGate>,
}

impl std::fmt::Debug for WritePermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WritePermit")
    }
}

impl Drop for WritePermit {
    fn drop(&mut self) {
        *self.gate.last_write.lock().expect("gate clock") = Instant::now();
        self.gate.running.fetch_sub(1, SeqCst);
    }
}

impl WriterGate {
    pub(crate) fn new() -> Self {
        Self {
            holder: Holder::new(Role::Writer, LEASE),
            running: AtomicUsize::new(0),
            fenced: AtomicBool::new(false),
            lease: tokio::sync::Mutex::new(None),
            last_write: std::sync::Mutex::new(Instant::now()),
            keeper: AtomicBool::new(false),
        }
    }

    fn permit(self: &Arc<Self>) -> WritePermit {
        self.running.fetch_add(1, SeqCst);
        WritePermit { gate: self.clone() }
    }

    /// Gives the lease up if it is held and no write runs (the lock held).
    async fn give_up_if_idle(&self, db: &Db, lease: &mut Option<Instant>) {
        if lease.is_some() && self.running.load(SeqCst) == 0 {
            self.give_up(db, lease).await;
        }
    }

    /// Gives the lease up (the lock held).
    async fn give_up(&self, db: &Db, lease: &mut Option<Instant>) {
        *lease = Some(Instant::now());
        match self.holder.write(db, RELEASE).await {
            Ok(()) => *lease = None,
            Err(error) => {
                tracing::warn!(%error, "cannot give the write lease up; it runs out by itself");
            }
        }
    }

    /// Renews the lease (the lock held). One that ran out while writes run is taken again at
    /// once, and a migration seen then fences the writes as in [`try_enter`].
    async fn renew(&self, db: &Db, lease: &mut Option<Instant>) -> Result<(), DbError> {
        let renewed = Instant::now();
        if self.holder.renew(db).await? {
            *lease = Some(usable_until(renewed, LEASE));
            return Ok(());
        }
        let running = self.running.load(SeqCst);
        tracing::error!(
            running,
            "the write lease ran out (clickhouse missed its renewals for a minute)"
        );
        *lease = None;
        if running > 0 && !self.take(db, lease).await? {
            tracing::error!("a migration started while writes ran without a lease");
        }
        Ok(())
    }

    /// Takes the lease (the lock held), then looks for migrations: `true` when none runs and
    /// the lease is usable, else the writes are fenced.
    async fn take(&self, db: &Db, lease: &mut Option<Instant>) -> Result<bool, DbError> {
        let taken = Instant::now();
        // Held, maybe, from here: given up if a migration is found.
        *lease = Some(taken);
        self.holder.write(db, TAKE).await?;
        if live(db, Role::Migrator).await?.is_empty() {
            *lease = Some(usable_until(taken, LEASE));
            return Ok(true);
        }
        self.fenced.store(true, SeqCst);
        Ok(false)
    }
}

/// Lets one write start (see [`Db::enter_write`]).
pub(crate) async fn enter(
    gate: &Arc<WriterGate>,
    db: &Db,
    when_migrating: WhenMigrating,
) -> Result<WritePermit, DbError> {
    let mut told = false;
    loop {
        let entered = match when_migrating {
            WhenMigrating::Wait => patiently(|| try_enter(gate, db)).await?,
            WhenMigrating::Refuse => try_enter(gate, db).await?,
        };
        if let Some(permit) = entered {
            return Ok(permit);
        }
        if when_migrating == WhenMigrating::Refuse {
            return Err(DbError::Migrating);
        }
        if !told {
            told = true;
            tracing::warn!("a schema migration is running; writes wait for it to end");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// A permit, or `None` while a migration runs.
async fn try_enter(gate: &Arc<WriterGate>, db: &Db) -> Result<Option<WritePermit>, DbError> {
    let mut lease = gate.lease.lock().await;
    if gate.fenced.load(SeqCst) {
        if !live(db, Role::Migrator).await?.is_empty() {
            return Ok(None);
        }
        gate.fenced.store(false, SeqCst);
    }
    if lease.is_some_and(|usable| Instant::now() < usable) {
        return Ok(Some(gate.permit()));
    }
    start_keeper(gate, db);
    if gate.take(db, &mut lease).await? {
        return Ok(Some(gate.permit()));
    }
    gate.give_up_if_idle(db, &mut lease).await;
    Ok(None)
}

/// Gives this process's lease up if no write runs: a process done writing (an `ingest` run, a
/// stopped server) does not hold a migration up until its lease runs out.
pub(crate) async fn release(gate: &WriterGate, db: &Db) {
    let mut lease = gate.lease.lock().await;
    gate.give_up_if_idle(db, &mut lease).await;
}

/// Starts the task that renews this process's writer lease, gives it up when idle or when a
/// migration starts, and lifts the fence when the migration is over.
fn start_keeper(gate: &Arc<WriterGate>, db: &Db) {
    if gate.keeper.swap(true, SeqCst) {
        return;
    }
    let gate = gate.clone();
    let db = db.clone();
    tokio::spawn(async move {
        loop {
            let fenced = gate.fenced.load(SeqCst);
            tokio::time::sleep(if fenced { POLL } else { RENEW_EVERY }).await;
            if let Err(error) = keep(&gate, &db).await {
                tracing::warn!(%error, "cannot renew the write lease");
            }
        }
    });
}

/// One round of the keeper.
async fn keep(gate: &WriterGate, db: &Db) -> Result<(), DbError> {
    let mut lease = gate.lease.lock().await;
    if lease.is_none() && !gate.fenced.load(SeqCst) {
        return Ok(());
    }
    let migrating = !live(db, Role::Migrator).await?.is_empty();
    gate.fenced.store(migrating, SeqCst);
    if lease.is_none() {
        return Ok(());
    }
    if migrating {
        // The running writes finish under the lease, renewed meanwhile however long they
        // take; none starts (the lock is held).
        let mut renewed = Instant::now();
        while gate.running.load(SeqCst) > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if renewed.elapsed() >= RENEW_EVERY {
                renewed = Instant::now();
                gate.renew(db, &mut lease).await?;
            }
        }
        gate.give_up(db, &mut lease).await;
        return Ok(());
    }
    let idle = gate.running.load(SeqCst) == 0
        && gate.last_write.lock().expect("gate clock").elapsed() >= IDLE;
    if idle {
        gate.give_up(db, &mut lease).await;
        return Ok(());
    }
    gate.renew(db, &mut lease).await
}

/// A migration's lease, held from [`MigratorLease::acquire`] until [`MigratorLease::end`].
pub struct MigratorLease {
    db: Db,
    holder: Arc<Holder>,
    renewer: tokio::task::JoinHandle<()>,
    /// When the lease was last renewed (taken, at first).
    renewed: Arc<std::sync::Mutex<Instant>>,
    /// Whether a renewal found it run out.
    lost: Arc<AtomicBool>,
}

impl MigratorLease {
    /// Takes a migrator lease once no other migration runs, then waits until no write runs.
    pub async fn acquire(db: &Db) -> Result<Self, DbError> {
        Self::acquire_lasting(db, LEASE).await
    }

    /// [`Self::acquire`] with a lease of another length (tests use a short one).
    pub async fn acquire_lasting(db: &Db, lease: Duration) -> Result<Self, DbError> {
        // One holder for every attempt: each of its rows has a later sequence number.
        let holder = Arc::new(Holder::new(Role::Migrator, lease));
        let mut told = false;
        loop {
            match Self::attempt(db, &holder, Instant::now()).await {
                Ok(Some(lease)) => return Ok(lease),
                Ok(None) => {}
                Err(error) => {
                    // Best effort: otherwise it runs out by itself.
                    let _ = holder.write(db, RELEASE).await;
                    return Err(error);
                }
            }
            if !told {
                told = true;
                tracing::warn!("another migrate is running; waiting for it to end");
            }
            // Two that start at once may see each other: both step back, for different times.
            tokio::time::sleep(POLL + Duration::from_millis(random() % 1500)).await;
        }
    }

    /// Takes the lease and waits for the writes; `None` (the lease given up) when another
    /// migration runs, or when the lease ran out while waiting.
    async fn attempt(
        db: &Db,
        holder: &Arc<Holder>,
        taken: Instant,
    ) -> Result<Option<Self>, DbError> {
        holder.write(db, TAKE).await?;
        let migrators = patiently(|| live(db, Role::Migrator)).await?;
        if migrators != [holder.id] {
            holder.write(db, RELEASE).await?;
            return Ok(None);
        }
        let lease = Self::renewing(db, holder.clone(), taken);
        let mut told = Vec::new();
        loop {
            let writers = patiently(|| live_labelled(db, Role::Writer)).await?;
            if !lease.holds() {
                lease.end().await;
                return Ok(None);
            }
            if writers.is_empty() {
                return Ok(Some(lease));
            }
            // Said again only when the writers waited for change.
            if writers != told {
                let names: Vec<String> = writers
                    .iter()
                    .map(|(holder, label)| match label.as_str() {
                        "" => format!("holder {holder:016x}"),
                        label => label.to_owned(),
                    })
                    .collect();
                tracing::warn!(
                    writers = %names.join("; "),
                    "waiting for running writes (ingest, pushes, reindex, forget) to pause"
                );
                told = writers;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The lease taken at `taken`, from now on renewed in the background.
    fn renewing(db: &Db, holder: Arc<Holder>, taken: Instant) -> Self {
        let renewed = Arc::new(std::sync::Mutex::new(taken));
        let lost = Arc::new(AtomicBool::new(false));
        let renewer = {
            let (db, holder, renewed, lost) =
                (db.clone(), holder.clone(), renewed.clone(), lost.clone());
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(RENEW_EVERY).await;
                    let at = Instant::now();
                    match holder.renew(&db).await {
                        Ok(true) => *renewed.lock().expect("renewal clock") = at,
                        Ok(false) => {
                            lost.store(true, SeqCst);
                            return;
                        }
                        Err(error) => tracing::warn!(%error, "cannot renew the migration's lease"),
                    }
                }
            })
        };
        Self {
            db: db.clone(),
            holder,
            renewer,
            renewed,
            lost,
        }
    }

    /// Whether the lease is surely still live: renewed recently enough, and never found run
    /// out. A migration checks before each statement, since writers resume once it has run
    /// out.
    pub fn holds(&self) -> bool {
        let renewed = *self.renewed.lock().expect("renewal clock");
        !self.lost.load(SeqCst) && Instant::now() < usable_until(renewed, self.holder.lease)
    }

    /// Gives the lease up: writes resume.
    pub async fn end(self) {
        self.renewer.abort();
        if let Err(error) = self.holder.write(&self.db, RELEASE).await {
            tracing::warn!(%error, "cannot give the migration's lease up; it runs out by itself");
        }
    }
}

/// A lease abandoned without [`MigratorLease::end`] (its task cancelled) stops being renewed,
/// and runs out.
impl Drop for MigratorLease {
    fn drop(&mut self) {
        self.renewer.abort();
    }
}

/// A random number: holder IDs no other process picks, and back-off times (the standard
/// library seeds each hasher randomly).
fn random() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}
