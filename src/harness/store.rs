//! Reading a harness's SQLite store while the harness may be writing it: read-only, never
//! modified, one consistent snapshot per read.
//!
//! The stores run in WAL mode. A read-only connection sees the last committed state (the WAL
//! included) and takes no lock that blocks the writer; it does need the store's shared-memory
//! file, so when that cannot be opened (a read-only directory, a store left without one) the
//! store and its WAL are copied aside and the copy is read.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// How long a read waits for a writer holding the store (a checkpoint, a migration).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// An open store.
pub struct Store {
    connection: Connection,
    /// A copy being read instead of the store, removed on drop.
    copy: Option<PathBuf>,
}

impl Store {
    /// Opens the store at `path` for reading.
    pub fn open(path: &Path) -> io::Result<Self> {
        if !path.is_file() {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no such store"));
        }
        match Self::connect(path) {
            Ok(connection) => Ok(Self {
                connection,
                copy: None,
            }),
            Err(error) => {
                tracing::debug!(store = %path.display(), %error, "reading a copy of the store");
                Self::open_copy(path)
            }
        }
    }

    fn connect(path: &Path) -> rusqlite::Result<Connection> {
        let connection = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        connection.busy_timeout(BUSY_TIMEOUT)?;
        // Opening is lazy: this read proves the store (and its WAL) can be read.
        connection.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
        Ok(connection)
    }

    fn open_copy(path: &Path) -> io::Result<Self> {
        static COPIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("moraine-store-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let copy = dir.join("store.db");
        let result = (|| {
            std::fs::copy(path, &copy)?;
            let mut wal = path.as_os_str().to_owned();
            wal.push("-wal");
            if Path::new(&wal).is_file() {
                std::fs::copy(&wal, dir.join("store.db-wal"))?;
            }
            Self::connect(&copy).map_err(io::Error::other)
        })();
        match result {
            Ok(connection) => Ok(Self {
                connection,
                copy: Some(dir),
            }),
            Err(error) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(error)
            }
        }
    }

    /// Runs `read` in one read transaction: every query in it sees the same committed state.
    pub fn snapshot<T>(
        &mut self,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> io::Result<T> {
        let transaction = self
            .connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Deferred)
            .map_err(io::Error::other)?;
        let value = read(&transaction).map_err(io::Error::other)?;
        transaction.rollback().map_err(io::Error::other)?;
        Ok(value)
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some(dir) = self.copy.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Whether the store has a table named `name`.
pub fn has_table(connection: &Connection, name: &str) -> rusqlite::Result<bool> {
    connection.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [name],
        |row| row.get::<_, i64>(0).map(|n| n > 0),
    )
}

/// The columns of table `name`.
pub fn columns(connection: &Connection, name: &str) -> rusqlite::Result<Vec<String>> {
    let mut statement = connection.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let names = statement.query_map([name], |row| row.get::<_, String>(0))?;
    names.collect()
}
