//! Rows ingest writes: events (through `event_ingest`), turns, sessions and checkpoints.
//!
//! Timestamps are milliseconds since the epoch, which is how `DateTime64(3)` travels in RowBinary.

use serde::Serialize;

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
}

/// One version of a turn's row in `turns`.
#[derive(Debug, Clone, PartialEq, Serialize, clickhouse::Row)]
pub struct TurnRow {
    pub session_key: u64,
    pub ordinal: u32,
    pub turn_key: u64,
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

/// One version of a session's row in `sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, clickhouse::Row)]
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
}

/// One version of a file's checkpoint in `ingest_checkpoints`.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, clickhouse::Row)]
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
}
