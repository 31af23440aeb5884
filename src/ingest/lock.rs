//! One ingest at a time into a database from this machine: a second run of the same logs
//! waits for the first, so two runs never read the same checkpoints and both write.

use std::fs::{File, TryLockError};
use std::path::PathBuf;

use crate::config::Config;

/// Held while a run writes; the operating system releases it when the process ends, however
/// it ends.
#[derive(Debug)]
pub struct IngestLock {
    _file: File,
    path: PathBuf,
}

impl IngestLock {
    /// Takes the lock of `config`'s database, waiting while another run holds it. `None` when
    /// no lock file can be made (a read-only data directory): runs are then not serialized.
    pub async fn acquire(config: &Config) -> Option<Self> {
        let path = lock_path(config);
        let file = match open(&path) {
            Ok(file) => file,
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "cannot create the ingest lock; not waiting for other runs");
                return None;
            }
        };
        // Polled rather than blocked on: a run stopped while it waits must not be held up.
        let mut waiting = false;
        loop {
            match file.try_lock() {
                Ok(()) => return Some(Self { _file: file, path }),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(error)) => {
                    tracing::warn!(path = %path.display(), %error, "cannot take the ingest lock; not waiting for other runs");
                    return None;
                }
            }
            if !waiting {
                waiting = true;
                tracing::warn!(
                    database = %config.clickhouse.database,
                    "another ingest into this database is running; waiting for it to finish"
                );
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// Notes that a run failed while writing: the engine may have stored some of an insert's
    /// views and not others, so the next run checks the index statistics.
    pub fn note_failed_write(&self) {
        note_failed_write(&self.path);
    }

    /// Whether a run failed while writing since the statistics were last checked.
    pub fn failed_write_noted(&self) -> bool {
        self.path.with_extension("unsure").exists()
    }

    /// The statistics were checked.
    pub fn clear_failed_write(&self) {
        let _ = std::fs::remove_file(self.path.with_extension("unsure"));
    }
}

/// Notes a write cut short for `config`'s database (by a writer that may not hold the lock,
/// such as the ingest API): whoever next takes the lock checks the statistics first.
pub fn note_failed_write_of(config: &Config) {
    note_failed_write(&lock_path(config));
}

/// Whether a write was cut short since the statistics were last checked.
pub fn failed_write_noted_of(config: &Config) -> bool {
    lock_path(config).with_extension("unsure").exists()
}

fn note_failed_write(lock: &std::path::Path) {
    let note = lock.with_extension("unsure");
    let written = note
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&note, b""));
    if let Err(error) = written {
        tracing::warn!(%error, "cannot note the failed write for the next one");
    }
}

/// One lock file per ClickHouse endpoint and database, in the data directory.
fn lock_path(config: &Config) -> PathBuf {
    let target = format!("{}\n{}", config.clickhouse.url, config.clickhouse.database);
    let key = xxhash_rust::xxh3::xxh3_64(target.as_bytes());
    config
        .embedded
        .data_dir_path()
        .join("locks")
        .join(format!("ingest-{key:016x}.lock"))
}

fn open(path: &std::path::Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
}
