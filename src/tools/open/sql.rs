//! `open`'s statements and the event rows they return (sessions and turns are read as the
//! stored [`crate::rows`] they are).

use serde::Deserialize;

/// A session, whole.
pub(super) const SESSION_SQL: &str =
    "SELECT ?fields FROM sessions FINAL WHERE session_key = {s:UInt64}";

/// Every turn of a session.
pub(super) const SESSION_TURNS_SQL: &str =
    "SELECT ?fields FROM turns FINAL WHERE session_key = {s:UInt64} ORDER BY ordinal";

/// The sessions that started just before and just after one.
pub(super) const NEIGHBOUR_SESSIONS_SQL: &str = "
WITH (SELECT (started_at, session_key) FROM sessions FINAL WHERE session_key = {s:UInt64}) AS me
SELECT
    (SELECT session_key FROM sessions FINAL WHERE (started_at, session_key) < me ORDER BY started_at DESC, session_key DESC LIMIT 1),
    (SELECT session_key FROM sessions FINAL WHERE (started_at, session_key) > me ORDER BY started_at ASC, session_key ASC LIMIT 1)";

/// A turn and its neighbours: turn IDs carry the ordinal, so all three are one range read.
pub(super) const TURN_AND_NEIGHBOURS_SQL: &str = "SELECT ?fields FROM turns FINAL WHERE session_key = {s:UInt64} \
     AND ordinal BETWEEN {lo:UInt32} AND {hi:UInt32} ORDER BY ordinal";

/// A turn's events, as summaries.
pub(super) const TURN_EVENTS_SQL: &str = "
SELECT event_key, ordinal, toUInt8(event_type) AS event_type, ts, tool_name, model, summary, summary_truncated
FROM events
WHERE session_key = {s:UInt64}
  AND turn_ordinal = {t:UInt32}
ORDER BY ordinal";

/// The turns around an event (found by a scalar subquery on the event, so this statement need
/// not wait for the event's own).
pub(super) const EVENT_TURNS_SQL: &str = "
WITH (SELECT turn_ordinal FROM events WHERE session_key = {s:UInt64} AND event_key = {e:UInt64} LIMIT 1) AS o
SELECT ?fields FROM turns FINAL WHERE session_key = {s:UInt64} AND ordinal BETWEEN o - 1 AND o + 1 ORDER BY ordinal";

/// The event, and its neighbours' keys (their text is left out).
pub(super) const EVENT_SQL: &str = "
WITH (SELECT (turn_ordinal, ordinal) FROM events WHERE session_key = {s:UInt64} AND event_key = {e:UInt64} LIMIT 1) AS pos
SELECT event_key, turn_ordinal, ordinal, toUInt8(event_type) AS event_type, ts, model, originating_model, tool_name,
       exit_code, is_error,
       if(event_key = {e:UInt64}, text, '') AS text,
       if(event_key = {e:UInt64}, arguments, '') AS arguments,
       if(event_key = {e:UInt64}, raw, '') AS raw
FROM events
WHERE session_key = {s:UInt64} AND turn_ordinal = pos.1 AND ordinal BETWEEN pos.2 - 1 AND pos.2 + 1
ORDER BY ordinal";

/// An event of a turn, as listed by `open(turn)`.
#[derive(Debug, clickhouse::Row, Deserialize)]
pub(super) struct EventSummaryRow {
    pub event_key: u64,
    pub ordinal: u32,
    pub event_type: u8,
    pub ts: i64,
    pub tool_name: String,
    pub model: String,
    pub summary: String,
    pub summary_truncated: bool,
}

/// An event in full (or, for its neighbours, without text).
#[derive(Debug, clickhouse::Row, Deserialize)]
pub(super) struct EventRow {
    pub event_key: u64,
    pub turn_ordinal: u32,
    pub ordinal: u32,
    pub event_type: u8,
    pub ts: i64,
    pub model: String,
    pub originating_model: String,
    pub tool_name: String,
    pub exit_code: Option<i32>,
    pub is_error: bool,
    pub text: String,
    pub arguments: String,
    pub raw: String,
}
