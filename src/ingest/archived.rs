//! A pushed log's bytes read back from its archive (`raw_chunks`): to compare a resent or
//! claimed log with what is stored, and to parse a log again.

use serde::Deserialize;

use super::IngestError;
use crate::db::Db;

#[derive(Debug, clickhouse::Row, Deserialize)]
struct ArchivedChunk {
    /// Where `piece` starts in the log.
    start: u64,
    #[serde(with = "serde_bytes")]
    piece: Vec<u8>,
}

/// The archived bytes `[from, to)` of a log's generation.
pub(crate) async fn read(
    db: &Db,
    file_key: u64,
    generation: u32,
    from: u64,
    to: u64,
) -> Result<Vec<u8>, IngestError> {
    if from >= to {
        return Ok(Vec::new());
    }
    let chunks: Vec<ArchivedChunk> = db
        .read(
            "ingest_archive",
            // Only the wanted bytes of each chunk leave the engine: a chunk is as large as
            // the request that brought it, and the head or tail of a log is a few KiB of it.
            "SELECT greatest(offset, {from:UInt64}) AS start, \
                    substring(data, start - offset + 1, \
                              least(offset + length(data), {to:UInt64}) - start) AS piece \
             FROM raw_chunks FINAL \
             WHERE file_key = {f:UInt64} AND generation = {g:UInt32} \
               AND offset < {to:UInt64} AND offset + length(data) > {from:UInt64} \
             ORDER BY offset",
        )
        .param("f", file_key)
        .param("g", generation)
        .param("from", from)
        .param("to", to)
        .fetch_all(db, db.default_deadline())
        .await?;
    let mut out = Vec::with_capacity((to - from) as usize);
    let mut at = from;
    for chunk in chunks {
        let end = chunk.start + chunk.piece.len() as u64;
        if chunk.start > at {
            break;
        }
        if end > at {
            out.extend_from_slice(&chunk.piece[(at - chunk.start) as usize..]);
            at = end;
        }
    }
    if at != to {
        return Err(IngestError::Archive(format!(
            "the archive of log {file_key:016x} lacks bytes {at}..{to}"
        )));
    }
    Ok(out)
}
