//! Which session a log is written to: sessions belong to the source that stored them first.
//!
//! A session's key derives from its harness and native ID, which any log can name: the same
//! log pushed from a second laptop, two machines syncing one home directory, or a file made to
//! carry another's session ID. A log that names a session another source stored, or holds
//! by a log with no event yet, is written apart, under a key of its own source (the native ID
//! stays what the log says), so it never retracts or replaces the first source's rows. A log
//! keeps the session its checkpoint names for as long as that session is one its identity
//! derives.
//!
//! Within one source, a second log holding a stored session's ID with other content (Gemini
//! CLI saves a sub-agent's chat under its parent's ID) is a session of its own under it, as
//! local discovery already makes it (see [`crate::harness::Identity::under`]), written apart in
//! turn when another source stored a session of that ID; a copy takes the session over, as a
//! renamed or replaced log does.

use std::collections::HashMap;

use serde::Deserialize;

use super::files::{self, LogFile};
use super::{IngestError, archived};
use crate::db::{Db, DbError};
use crate::harness::Identity;

/// How much of two logs' starts is compared to tell a copy from another log.
const COMPARED_BYTES: u64 = 64 * 1024;

#[derive(Debug, clickhouse::Row, Deserialize)]
struct Held {
    file_key: u64,
    session_key: u64,
    source: String,
    generation: u32,
    received: u64,
}

/// Who holds some sessions: the source of each one's row, and the logs written to them (a
/// session whose logs hold no event yet has no row, and is held by their source all the same).
struct Holders {
    owners: HashMap<u64, String>,
    held: Vec<Held>,
}

impl Holders {
    async fn read(db: &Db, keys: &[u64], deadline: std::time::Instant) -> Result<Self, DbError> {
        let owners = db
            .read(
                "ingest_claim_owners",
                "SELECT session_key, argMax(source, version) FROM sessions \
                 WHERE session_key IN {keys:Array(UInt64)} GROUP BY session_key",
            )
            .param("keys", keys)
            .fetch_all::<(u64, String)>(db, deadline)
            .await?
            .into_iter()
            .collect();
        let held = db
            .read(
                "ingest_claim_logs",
                "SELECT file_key, session_key, toString(source) AS source, generation, received \
                 FROM ingest_checkpoints FINAL WHERE session_key IN {keys:Array(UInt64)}",
            )
            .param("keys", keys)
            .fetch_all(db, deadline)
            .await?;
        Ok(Self { owners, held })
    }

    /// Whether a source other than `source` holds session `key`.
    fn elsewhere(&self, key: u64, source: &str) -> bool {
        match self.owners.get(&key) {
            Some(owner) => owner != source,
            None => self
                .held
                .iter()
                .any(|h| h.session_key == key && h.source != source),
        }
    }

    /// Whether `source`, and no other, holds session `key`.
    fn only(&self, key: u64, source: &str) -> bool {
        let held = self.owners.contains_key(&key) || self.held.iter().any(|h| h.session_key == key);
        held && !self.elsewhere(key, source)
    }
}

/// The key a log of `source` uses for session `native_id` when another source holds it. What
/// is hashed starts with a byte no session key's input has (0xFF is never in UTF-8, and a
/// harness name comes first there), ends the harness name with a NUL and gives the ID's length,
/// so no session ID a log holds, whatever bytes it spells, names another source's apart key.
pub fn apart_key(file: &LogFile, native_id: &str) -> u64 {
    let harness = file.harness.as_str();
    let mut bytes = Vec::with_capacity(harness.len() + native_id.len() + file.source.len() + 10);
    bytes.push(0xFF);
    bytes.extend_from_slice(harness.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(&(native_id.len() as u64).to_le_bytes());
    bytes.extend_from_slice(native_id.as_bytes());
    bytes.extend_from_slice(file.source.as_bytes());
    xxhash_rust::xxh3::xxh3_64(&bytes).max(1)
}

/// The apart key of stores written before [`apart_key`] had inputs of its own: a log already
/// written there stays, and a new log of its source joins it while that source alone holds it
/// (another source's log may have taken the key, by a session ID that spells it).
fn shared_apart_key(file: &LogFile, native_id: &str) -> u64 {
    files::session_key(file.harness, &format!("{native_id}\u{0}{}", file.source))
}

/// Settles the session each of `files` is written to (see the module's doc). `heads`, when
/// given, holds what is known of each new log's first bytes (a pushed log sent from its
/// start): a log of the same source with other content is then told apart from a copy.
pub async fn claim(db: &Db, files: &mut [LogFile], heads: Option<&[&[u8]]>) -> Result<(), DbError> {
    for (at, chunk) in files.chunks_mut(10_000).enumerate() {
        let heads = heads.map(|h| &h[at * 10_000..(at * 10_000 + chunk.len()).min(h.len())]);
        claim_chunk(db, chunk, heads).await?;
    }
    Ok(())
}

async fn claim_chunk(
    db: &Db,
    files: &mut [LogFile],
    heads: Option<&[&[u8]]>,
) -> Result<(), DbError> {
    if files.is_empty() {
        return Ok(());
    }
    let deadline = db.default_deadline();
    let file_keys: Vec<u64> = files.iter().map(|f| f.file_key).collect();
    let placed: HashMap<u64, u64> = db
        .read(
            "ingest_claim_checkpoints",
            "SELECT file_key, session_key FROM ingest_checkpoints FINAL \
             WHERE file_key IN {keys:Array(UInt64)}",
        )
        .param("keys", &file_keys)
        .fetch_all::<(u64, u64)>(db, deadline)
        .await?
        .into_iter()
        .collect();
    // Logs already written keep their session while their identity derives it.
    let mut new = Vec::new();
    for (i, file) in files.iter_mut().enumerate() {
        match placed.get(&file.file_key) {
            Some(key) if keep(file, *key) => {}
            _ => new.push(i),
        }
    }
    if new.is_empty() {
        return Ok(());
    }
    // Each log's session, and the old form of its apart key (see `shared_apart_key`).
    let keys: Vec<u64> = new
        .iter()
        .flat_map(|&i| {
            let file = &files[i];
            [file.session_key, shared_apart_key(file, &file.native_id)]
        })
        .collect();
    let holders = Holders::read(db, &keys, deadline).await?;
    for i in new {
        let file = &mut files[i];
        let native_id = file.native_id.clone();
        if holders.elsewhere(file.session_key, &file.source) {
            // A session this source already holds apart under the old form stays its own.
            let shared = shared_apart_key(file, &native_id);
            file.session_key = if holders.only(shared, &file.source) {
                shared
            } else {
                apart_key(file, &native_id)
            };
            continue;
        }
        let Some(head) = heads.and_then(|h| h.get(i)) else {
            continue;
        };
        let other = holders.held.iter().find(|h| {
            h.session_key == file.session_key
                && h.source == file.source
                && h.file_key != file.file_key
        });
        if let Some(other) = other {
            let to = other.received.min(COMPARED_BYTES);
            let stored = match archived::read(db, other.file_key, other.generation, 0, to).await {
                Ok(bytes) => bytes,
                Err(IngestError::Db(e)) => return Err(e),
                // Nothing to compare with: taken for a copy, as a replaced log.
                Err(_) => continue,
            };
            let head = &head[..head.len().min(COMPARED_BYTES as usize)];
            if !files::is_copy(&stored, head) {
                let Identity {
                    native_id,
                    subagent,
                } = Identity::under(&native_id, &file.path);
                // Any log can name the session under this one: another source's stays its.
                let under = files::session_key(file.harness, &native_id);
                let under_held = Holders::read(db, &[under], deadline).await?;
                file.session_key = if under_held.elsewhere(under, &file.source) {
                    apart_key(file, &native_id)
                } else {
                    under
                };
                file.native_id = native_id;
                file.subagent = subagent;
            }
        }
    }
    Ok(())
}

/// Whether a log written to session `key` stays there: the key is one its identity derives
/// (its session, or a session of its own under it, in its own name or apart). The log's
/// identity is set to match.
fn keep(file: &mut LogFile, key: u64) -> bool {
    let base = file.native_id.clone();
    let under = Identity::under(&base, &file.path);
    let candidates = [
        (
            files::session_key(file.harness, &base),
            &base,
            file.subagent,
        ),
        (apart_key(file, &base), &base, file.subagent),
        (shared_apart_key(file, &base), &base, file.subagent),
        (
            files::session_key(file.harness, &under.native_id),
            &under.native_id,
            true,
        ),
        (apart_key(file, &under.native_id), &under.native_id, true),
        (
            shared_apart_key(file, &under.native_id),
            &under.native_id,
            true,
        ),
    ];
    let Some((_, native_id, subagent)) = candidates.iter().find(|(k, _, _)| *k == key) else {
        return false;
    };
    file.native_id = (*native_id).clone();
    file.subagent = *subagent;
    file.session_key = key;
    true
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::ingest::files::Origin;
    use crate::vocab::Harness;

    fn log(source: &str, native_id: &str) -> LogFile {
        LogFile {
            path: PathBuf::from("/logs/a.jsonl"),
            harness: Harness::Codex,
            source: source.into(),
            native_id: native_id.into(),
            subagent: false,
            session_key: files::session_key(Harness::Codex, native_id),
            file_key: 1,
            origin: Origin::Push,
            size: 0,
        }
    }

    #[test]
    fn test_no_session_id_spells_another_sources_apart_key() {
        let alice = log("alice", "X");
        let spelled = log("mallory", "X\0alice");
        assert_ne!(apart_key(&alice, "X"), spelled.session_key);
        // Where the ID ends is part of the key: ("X", "\0alice") is not ("X\0", "alice").
        assert_ne!(
            apart_key(&log("\0alice", "X"), "X"),
            apart_key(&log("alice", "X\0"), "X\0")
        );
        // A source's copies of one session share their apart key; other sources' do not.
        assert_eq!(apart_key(&alice, "X"), apart_key(&log("alice", "X"), "X"));
        assert_ne!(apart_key(&alice, "X"), apart_key(&log("bob", "X"), "X"));
    }

    #[test]
    fn test_a_log_written_apart_keeps_its_session_whichever_form_its_key_has() {
        for key in [
            apart_key(&log("alice", "X"), "X"),
            shared_apart_key(&log("alice", "X"), "X"),
        ] {
            let mut file = log("alice", "X");
            assert!(keep(&mut file, key));
            assert_eq!((file.session_key, file.native_id.as_str()), (key, "X"));
        }
        assert!(!keep(
            &mut log("alice", "X"),
            apart_key(&log("bob", "X"), "X")
        ));
    }
}
