//! Pushed bytes as the archive (`raw_chunks`) holds them, read for many logs in one statement:
//! a request plans all its logs against one [`Archive`] of the ranges they need, filled by one
//! read per round instead of one or two per log.

use std::collections::HashMap;

use serde::Deserialize;

use super::AppendError;
use crate::db::Db;

/// The bytes `[from, to)` of generation `generation` of the log `file_key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Range {
    pub file_key: u64,
    pub generation: u32,
    pub from: u64,
    pub to: u64,
}

/// Ranges read so far.
#[derive(Debug, Default)]
pub(crate) struct Archive {
    read: HashMap<Range, Vec<u8>>,
}

impl Archive {
    /// The bytes of `range`, when they have been read.
    pub(crate) fn get(&self, range: Range) -> Option<&[u8]> {
        if range.from >= range.to {
            return Some(&[]);
        }
        self.read.get(&range).map(Vec::as_slice)
    }

    /// Reads `ranges` (one statement), each whole or an error naming what is missing.
    pub(crate) async fn fetch(&mut self, db: &Db, ranges: &[Range]) -> Result<(), AppendError> {
        let mut wanted: Vec<Range> = ranges
            .iter()
            .copied()
            .filter(|r| r.from < r.to && !self.read.contains_key(r))
            .collect();
        wanted.sort_by_key(|r| (r.file_key, r.generation, r.from, r.to));
        wanted.dedup();
        if wanted.is_empty() {
            return Ok(());
        }
        let keys: Vec<u64> = wanted.iter().map(|r| r.file_key).collect();
        let tuples: Vec<(u64, u32, u64, u64)> = wanted
            .iter()
            .map(|r| (r.file_key, r.generation, r.from, r.to))
            .collect();
        let pieces: Vec<Piece> = db
            .read(
                "ingest_archive",
                // Only the wanted bytes of each chunk leave the engine: a chunk is as large as
                // the request that brought it, and the head or tail of a log is a few KiB of it.
                "SELECT q.f AS file_key, q.g AS generation, q.lo AS lo, q.hi AS hi, \
                        greatest(c.offset, q.lo) AS start, \
                        substring(c.data, start - c.offset + 1, \
                                  least(c.offset + length(c.data), q.hi) - start) AS piece \
                 FROM raw_chunks AS c FINAL \
                 INNER JOIN (SELECT tupleElement(r, 1) AS f, tupleElement(r, 2) AS g, \
                                    tupleElement(r, 3) AS lo, tupleElement(r, 4) AS hi \
                             FROM (SELECT arrayJoin({ranges:Array(Tuple(UInt64, UInt32, UInt64, UInt64))}) AS r)) AS q \
                   ON c.file_key = q.f AND c.generation = q.g \
                 WHERE c.file_key IN {keys:Array(UInt64)} \
                   AND c.offset < q.hi AND c.offset + length(c.data) > q.lo \
                 ORDER BY file_key, generation, lo, hi, start",
            )
            .param("ranges", &tuples)
            .param("keys", &keys)
            .fetch_all(db, db.default_deadline())
            .await?;
        let mut assembled: HashMap<Range, (u64, Vec<u8>)> = wanted
            .iter()
            .map(|r| (*r, (r.from, Vec::with_capacity((r.to - r.from) as usize))))
            .collect();
        for piece in pieces {
            let range = Range {
                file_key: piece.file_key,
                generation: piece.generation,
                from: piece.lo,
                to: piece.hi,
            };
            let Some((at, bytes)) = assembled.get_mut(&range) else {
                continue;
            };
            let end = piece.start + piece.piece.len() as u64;
            if piece.start > *at || end <= *at {
                continue;
            }
            bytes.extend_from_slice(&piece.piece[(*at - piece.start) as usize..]);
            *at = end;
        }
        for (range, (at, bytes)) in assembled {
            if at != range.to {
                return Err(AppendError::Internal(format!(
                    "the archive of log {:016x} lacks bytes {at}..{}",
                    range.file_key, range.to
                )));
            }
            self.read.insert(range, bytes);
        }
        Ok(())
    }
}

#[derive(Debug, clickhouse::Row, Deserialize)]
struct Piece {
    file_key: u64,
    generation: u32,
    lo: u64,
    hi: u64,
    /// Where `piece` starts in the log.
    start: u64,
    #[serde(with = "serde_bytes")]
    piece: Vec<u8>,
}
