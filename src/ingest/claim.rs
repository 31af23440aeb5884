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
//! local discovery already makes it (see [`crate::harness::Identity::under`]); a copy takes the session
//! over, as a renamed or replaced log does.

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

/// The key a log of `source` uses for session `native_id` when another source holds it.
pub fn apart_key(file: &LogFile, native_id: &str) -> u64 {
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
    let keys: Vec<u64> = new.iter().map(|&i| files[i].session_key).collect();
    let owners: HashMap<u64, String> = db
        .read(
            "ingest_claim_owners",
            "SELECT session_key, argMax(source, version) FROM sessions \
             WHERE session_key IN {keys:Array(UInt64)} GROUP BY session_key",
        )
        .param("keys", &keys)
        .fetch_all::<(u64, String)>(db, deadline)
        .await?
        .into_iter()
        .collect();
    // The logs already written to these sessions: a session whose logs have no event yet has
    // no row, and is held by their source all the same.
    let held: Vec<Held> = db
        .read(
            "ingest_claim_logs",
            "SELECT file_key, session_key, toString(source) AS source, generation, received \
             FROM ingest_checkpoints FINAL WHERE session_key IN {keys:Array(UInt64)}",
        )
        .param("keys", &keys)
        .fetch_all(db, deadline)
        .await?;
    for i in new {
        let file = &mut files[i];
        let native_id = file.native_id.clone();
        let held_elsewhere = match owners.get(&file.session_key) {
            Some(owner) => *owner != file.source,
            None => held
                .iter()
                .any(|h| h.session_key == file.session_key && h.source != file.source),
        };
        if held_elsewhere {
            file.session_key = apart_key(file, &native_id);
            continue;
        }
        let Some(head) = heads.and_then(|h| h.get(i)) else {
            continue;
        };
        let other = held.iter().find(|h| {
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
                file.session_key = files::session_key(file.harness, &native_id);
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
        (
            files::session_key(file.harness, &under.native_id),
            &under.native_id,
            true,
        ),
        (apart_key(file, &under.native_id), &under.native_id, true),
    ];
    let Some((_, native_id, subagent)) = candidates.iter().find(|(k, _, _)| *k == key) else {
        return false;
    };
    file.native_id = (*native_id).clone();
    file.subagent = *subagent;
    file.session_key = key;
    true
}
