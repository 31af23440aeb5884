//! The stored rows: what ingest writes (events through `event_ingest`, turns, sessions,
//! checkpoints) and the tools read back (turns and sessions), plus how an event's source record
//! is stored without repeating its text.
//!
//! Timestamps are milliseconds since the epoch, which is how `DateTime64(3)` travels in RowBinary.

use serde::{Deserialize, Serialize};

/// One row of `event_ingest`; the materialized views store and index it.
#[derive(Debug, Clone, PartialEq, Serialize, clickhouse::Row)]
pub struct EventRow {
    pub session_key: u64,
    pub turn_ordinal: u32,
    pub ordinal: u32,
    pub event_key: u64,
    pub event_type: i8,
    pub ts: i64,
    pub model: String,
    pub originating_model: String,
    pub tool_name: String,
    pub tool_call_id: String,
    pub exit_code: Option<i32>,
    pub is_error: bool,
    pub text: String,
    pub arguments: String,
    pub summary: String,
    pub summary_truncated: bool,
    pub raw: String,
    pub searchable: bool,
    pub self_tool: bool,
    pub doc_len: u16,
    pub line_no: u32,
    pub terms: Vec<u64>,
    pub tfs: Vec<u16>,
    /// The version of the write that stores the row (set by the writer): tells two copies of
    /// one event apart, and names the incarnation of a session a retraction removes.
    pub batch: u64,
}

/// One version of a turn's row in `turns` (read whole with `SELECT ?fields`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, clickhouse::Row)]
pub struct TurnRow {
    pub session_key: u64,
    pub ordinal: u32,
    pub completed: bool,
    pub terminal_event_key: u64,
    pub event_count: u32,
    pub started_at: i64,
    pub updated_at: i64,
    pub user_event_key: u64,
    pub user_preview: String,
    pub user_truncated: bool,
    pub final_event_key: u64,
    pub final_preview: String,
    pub final_truncated: bool,
    pub tools_called: Vec<String>,
    pub event_types: Vec<String>,
    pub version: u64,
}

/// One version of a session's row in `sessions` (read whole with `SELECT ?fields`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, clickhouse::Row)]
pub struct SessionRow {
    pub session_key: u64,
    pub harness: String,
    pub source: String,
    pub native_id: String,
    pub title: String,
    pub slug: String,
    pub summary: String,
    pub cwd: String,
    pub model: String,
    pub started_at: i64,
    pub updated_at: i64,
    pub turn_count: u32,
    pub event_count: u32,
    pub completed: bool,
    pub mode: String,
    pub version: u64,
    /// The unit vector of what the session's prose says, written to `session_vectors` beside
    /// the row (never read back with it; empty before any prose, or without a model).
    #[serde(skip)]
    pub prose_vector: Vec<f32>,
}

/// One version of a session's row in `session_vectors` (see `sql/013_session_vectors.sql`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, clickhouse::Row)]
pub struct SessionVectorRow {
    pub sess: u64,
    pub vector: Vec<f32>,
    pub version: u64,
}

/// One version of a file's checkpoint in `ingest_checkpoints`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, clickhouse::Row)]
pub struct CheckpointRow {
    pub file_key: u64,
    pub path: String,
    pub harness: String,
    pub source: String,
    pub session_key: u64,
    pub offset: u64,
    pub line_no: u32,
    pub head_hash: u64,
    pub tail_hash: u64,
    pub state: String,
    pub version: u64,
    /// Bytes of the log received (archived, for pushed logs): at least `offset`, the bytes
    /// parsed. The fingerprint (`head_hash`, `tail_hash`) covers them.
    pub received: u64,
    /// The archive generation of the log's bytes: a replaced log starts the next one.
    pub generation: u32,
    /// `local` (read from this machine's disk) or `push` (sent to the ingest API).
    pub origin: String,
    /// When this version was written (ms since the epoch).
    pub updated_at: i64,
}

/// One chunk of a log's archived bytes, in `raw_chunks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, clickhouse::Row)]
pub struct RawChunkRow {
    pub file_key: u64,
    pub generation: u32,
    pub offset: u64,
    /// Shared with the request that brought it (a piece of its body), not copied.
    pub data: bytes::Bytes,
    /// Ms since the epoch; the newest of chunks at the same offset wins.
    pub received_at: i64,
}

/// A stored tool-call `arguments` text as JSON; text that is not JSON stays a string value.
pub fn arguments_value(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_owned()))
}

/// Stands for the event's text inside its stored source record. The text is stored once, in
/// `text`; records mostly repeat it verbatim, and storing it twice doubled what ingest writes.
const TEXT_MARKER: &str = "\"\\u0000moraine:text\\u0000\"";

/// Texts shorter than this are left in the record (too small to matter).
const STRIP_MIN_BYTES: usize = 128;

/// The source record with the (JSON-encoded) event text replaced by a marker, when it contains it.
pub fn strip_text(raw: String, text: &str) -> String {
    if text.len() < STRIP_MIN_BYTES || raw.contains(TEXT_MARKER) {
        return raw;
    }
    let encoded = serde_json::to_string(text).expect("strings serialise");
    // Look for a short prefix, then compare the rest in place: far cheaper than searching for
    // a needle kilobytes long.
    let probe = &encoded.as_bytes()[..encoded.len().min(64)];
    let found = memchr::memmem::find_iter(raw.as_bytes(), probe)
        .find(|&at| raw.as_bytes()[at..].starts_with(encoded.as_bytes()));
    match found {
        Some(at) => {
            let mut stripped = String::with_capacity(raw.len() - encoded.len() + TEXT_MARKER.len());
            stripped.push_str(&raw[..at]);
            stripped.push_str(TEXT_MARKER);
            stripped.push_str(&raw[at + encoded.len()..]);
            stripped
        }
        None => raw,
    }
}

/// The source record as it was read, from the stored record and the event's text.
pub fn restore_text(stored: &str, text: &str) -> String {
    match stored.find(TEXT_MARKER) {
        Some(at) => {
            let encoded = serde_json::to_string(text).expect("strings serialise");
            format!(
                "{}{encoded}{}",
                &stored[..at],
                &stored[at + TEXT_MARKER.len()..]
            )
        }
        None => stored.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_text_round_trips_through_the_stored_record() {
        let text = "line one\nwith \"quotes\" and \\backslashes\\ and é 数据 ".repeat(10);
        let record =
            serde_json::json!({"type": "x", "payload": {"output": text, "n": 1}}).to_string();
        let stored = strip_text(record.clone(), &text);
        assert!(stored.len() < record.len() / 2);
        assert_eq!(restore_text(&stored, &text), record);
        // Short texts, and records without the text, are kept as they are.
        assert_eq!(strip_text(record.clone(), "short"), record);
        assert_eq!(strip_text(record.clone(), &"absent ".repeat(40)), record);
        assert_eq!(restore_text(&record, &text), record);
    }
}
