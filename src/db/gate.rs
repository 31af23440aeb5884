//! The write gate: a schema migration runs while no writer writes, and one migration at a time.
//!
//! A migration may copy a table into a new one and swap their names; a row written to the old
//! table during the copy would be left behind. So writers (ingest, pushes, `reindex`,
//! `forget`) and `migrate` meet in the `write_gate` table, by leases that expire unless renewed:
//!
//! - A writing process holds a *writer lease* while it writes, renewed by a keeper task. Once
//!   it sees a *migrator lease*, it starts no new write, lets the running ones finish and
//!   gives its lease up; it writes again once no migrator lease is live.
//! - `migrate` takes a migrator lease, waits until it is the oldest live one (two migrations
//!   never run at once), then until no writer lease is live, and only then changes the schema.
//!
//! A writer checks for migrators when it takes its lease, after writing it; a migrator looks
//! for writers after writing its own. Whichever wrote second sees the other. A process that
//! dies holding a lease blocks the other side for at most [`LEASE`]. Times are the server's
//! (`now64`), so the machines' clocks do not matter.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use tokio::time::Instant;

use super::{Db, DbError};

/// How long a lease lasts unless renewed.
pub const LEASE: Duration = Duration::from_secs(60);
/// A writer starts a write only while its lease has at least this long left by its own
/// reckoning: a write that has begun then finishes well before the lease could run out.
const LEASE_MARGIN: Duration = Duration::from_secs(20);
/// How often leases are renewed (and a writer looks for migrators).
const RENEW_EVERY: Duration = Duration::from_secs(5);
/// A writer that has not written for this long gives its lease up.
const IDLE: Duration = Duration::from_secs(10);
/// How often a side that waits for the other looks again.
const POLL: Duration = Duration::from_millis(500);
/// A migrator waits this long after writing its lease before comparing it with others': two
/// migrators starting at once then both see each other's.
const SETTLE: Duration = Duration::from_millis(300);

/// The gate's table. Created with `schema_migrations`, before any migration (see
/// [`crate::migrate`]); its rows live a day.
pub const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS write_gate \
    (role Enum8('writer' = 1, 'migrator' = 2), holder UInt64, \
     claimed DateTime64(6, 'UTC'), until DateTime64(6, 'UTC'), \
     written DateTime64(6, 'UTC') DEFAULT now64(6)) \
    ENGINE = MergeTree ORDER BY (role, holder, written) \
    TTL toDateTime(written) + INTERVAL 1 DAY";

/// Writes a lease: live for [`LEASE`] from now, or given up (`{live:UInt8}` = 0).
const WRITE_LEASE: &str = "INSERT INTO write_gate (role, holder, claimed, until) \
    SELECT {role:String}, {holder:UInt64}, now64(6), \
           if({live:UInt8} = 1, now64(6) + toIntervalMillisecond({lease_ms:UInt32}), toDateTime64(0, 6, 'UTC'))";

/// The live leases of one role, oldest claim first (a holder's claim is its first row's).
const LIVE_LEASES: &str = "SELECT holder FROM write_gate WHERE role = {role:String} \
    GROUP BY holder HAVING argMax(until, written) > now64(6) \
    ORDER BY min(claimed), holder";

/// The two sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
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
    holder: u64,
    /// Writes in progress.
    running: AtomicUsize,
    /// A migration was seen: no write starts until it is over.
    fenced: AtomicBool,
    /// The lease as this process knows it: when it stops being safe to start a write under
    /// it (`None`: no lease held). Taken and renewed under this lock.
    lease: tokio::sync::Mutex<Option<Instant>>,
    /// When the last write ended.
    last_write: std::sync::Mutex<Instant>,
    /// Whether the keeper task runs.
    keeper: AtomicBool,
}

/// A write in progress: the gate's lease is kept while it lives.
pub struct Entry {
    gate: Arc<WriterGate>,
}

impl Drop for Entry {
    fn drop(&mut self) {
        *self.gate.last_write.lock().expect("gate clock") = Instant::now();
        self.gate.running.fetch_sub(1, SeqCst);
    }
}

impl WriterGate {
    pub(crate) fn new() -> Self {
        Self {
            holder: random_holder(),
            running: AtomicUsize::new(0),
            fenced: AtomicBool::new(false),
            lease: tokio::sync::Mutex::new(None),
            last_write: std::sync::Mutex::new(Instant::now()),
            keeper: AtomicBool::new(false),
        }
    }
}

/// Lets one write start (see [`Db::enter_write`]).
pub(crate) async fn enter(
    gate: &Arc<WriterGate>,
    db: &Db,
    when_migrating: WhenMigrating,
) -> Result<Entry, DbError> {
    let mut told = false;
    loop {
        // A write is counted only under the lock, which the keeper holds while it waits for
        // the running writes to end: none starts meanwhile.
        let mut lease = gate.lease.lock().await;
        if gate.fenced.load(SeqCst) && live(db, Role::Migrator).await?.is_empty() {
            gate.fenced.store(false, SeqCst);
        }
        if !gate.fenced.load(SeqCst) {
            if lease.is_some_and(|usable| Instant::now() < usable) {
                return Ok(gate.entry());
            }
            start_keeper(gate, db);
            let taken = Instant::now();
            write_lease(db, Role::Writer, gate.holder, true).await?;
            // Held from here: the keeper gives it up if a migration is running.
            *lease = Some(taken);
            if live(db, Role::Migrator).await?.is_empty() {
                *lease = Some(taken + LEASE - LEASE_MARGIN);
                return Ok(gate.entry());
            }
            gate.fenced.store(true, SeqCst);
        }
        drop(lease);
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

/// Gives this process's lease up if no write runs: a process done writing (an `ingest` run, a
/// stopped server) does not hold a migration up until its lease runs out.
pub(crate) async fn release(gate: &WriterGate, db: &Db) {
    let mut lease = gate.lease.lock().await;
    if lease.is_none() || gate.running.load(SeqCst) > 0 {
        return;
    }
    match write_lease(db, Role::Writer, gate.holder, false).await {
        Ok(()) => *lease = None,
        Err(error) => {
            tracing::warn!(%error, "cannot give the write gate's lease up; it runs out by itself");
        }
    }
}

impl WriterGate {
    fn entry(self: &Arc<Self>) -> Entry {
        self.running.fetch_add(1, SeqCst);
        Entry { gate: self.clone() }
    }
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
                tracing::warn!(%error, "cannot renew the write gate's lease");
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
    let idle = gate.running.load(SeqCst) == 0
        && gate.last_write.lock().expect("gate clock").elapsed() >= IDLE;
    if migrating || idle {
        // What is still writing finishes under the lease; nothing new starts (the lock).
        while gate.running.load(SeqCst) > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        write_lease(db, Role::Writer, gate.holder, false).await?;
        *lease = None;
        return Ok(());
    }
    let renewed = Instant::now();
    write_lease(db, Role::Writer, gate.holder, true).await?;
    *lease = Some(renewed + LEASE - LEASE_MARGIN);
    Ok(())
}

/// A migrator's lease, held from [`Migration::begin`] until [`Migration::end`].
pub struct Migration {
    db: Db,
    holder: u64,
    renewer: tokio::task::JoinHandle<()>,
}

impl Migration {
    /// Takes a migrator lease and waits until no other migration and no write is running.
    pub async fn begin(db: &Db) -> Result<Self, DbError> {
        let holder = random_holder();
        write_lease(db, Role::Migrator, holder, true).await?;
        let renewer = {
            let db = db.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(RENEW_EVERY).await;
                    if let Err(error) = write_lease(&db, Role::Migrator, holder, true).await {
                        tracing::warn!(%error, "cannot renew the migration's lease");
                    }
                }
            })
        };
        let migration = Self {
            db: db.clone(),
            holder,
            renewer,
        };
        match migration.wait_for_others().await {
            Ok(()) => Ok(migration),
            Err(error) => {
                migration.end().await;
                Err(error)
            }
        }
    }

    async fn wait_for_others(&self) -> Result<(), DbError> {
        tokio::time::sleep(SETTLE).await;
        let mut told = false;
        while live(&self.db, Role::Migrator).await?.first() != Some(&self.holder) {
            if !told {
                told = true;
                tracing::warn!("another migrate is running; waiting for it to end");
            }
            tokio::time::sleep(POLL).await;
        }
        let mut told = false;
        loop {
            let writers = live(&self.db, Role::Writer).await?;
            if writers.is_empty() {
                return Ok(());
            }
            if !told {
                told = true;
                tracing::warn!(
                    writers = writers.len(),
                    "waiting for running writes (ingest, pushes, reindex, forget) to pause"
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Gives the lease up: writes resume.
    pub async fn end(self) {
        self.renewer.abort();
        if let Err(error) = write_lease(&self.db, Role::Migrator, self.holder, false).await {
            tracing::warn!(%error, "cannot give the migration's lease up; it runs out by itself");
        }
    }
}

/// A migration abandoned without [`Migration::end`] (its task cancelled) stops renewing its
/// lease, which then runs out.
impl Drop for Migration {
    fn drop(&mut self) {
        self.renewer.abort();
    }
}

async fn write_lease(db: &Db, role: Role, holder: u64, live: bool) -> Result<(), DbError> {
    db.write("write_gate_lease", WRITE_LEASE)
        .param("role", role.as_str())
        .param("holder", holder)
        .param("live", u8::from(live))
        .param("lease_ms", LEASE.as_millis() as u32)
        .consistent(db)
        .execute(db, db.default_deadline())
        .await
}

/// The holders of live leases of `role`, oldest claim first.
async fn live(db: &Db, role: Role) -> Result<Vec<u64>, DbError> {
    db.read("write_gate_live", LIVE_LEASES)
        .param("role", role.as_str())
        .consistent(db)
        .fetch_all(db, db.default_deadline())
        .await
}

/// A holder ID no other process picks (the standard library seeds each hasher randomly).
fn random_holder() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}
