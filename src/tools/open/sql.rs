//! `open`'s statements and the event rows they return (sessions and turns are read as the
//! stored [`crate::rows`] they are).

use serde::Deserialize;

/// A session, whole.
pub(super) const SESSION_SQL: &str =
    "SELECT ?fields FROM sessions FINAL WHERE session_key = {s:UInt64}";

/// A page of a session's turns: those after ordinal `{after}`, at most `{take}`.
pub(super) const SESSION_TURNS_SQL: &str = "SELECT ?fields FROM turns FINAL WHERE session_key = {s:UInt64} \
     AND ordinal > {after:UInt32} ORDER BY ordinal LIMIT {take:UInt32}";

/// The sessions that started just before and just after one (`«visible»`: a fragment that
/// keeps to the sessions the caller may see).
pub(super) const NEIGHBOUR_SESSIONS_SQL: &str = "
WITH (SELECT (started_at, session_key) FROM sessions FINAL WHERE session_key = {s:UInt64}) AS me
SELECT
    (SELECT session_key FROM sessions FINAL WHERE (started_at, session_key) < me «visible» ORDER BY started_at DESC, session_key DESC LIMIT 1),
    (SELECT session_key FROM sessions FINAL WHERE (started_at, session_key) > me «visible» ORDER BY started_at ASC, session_key ASC LIMIT 1)";

/// A session's family among the sessions of its harness and source: its parent (whose native
/// ID is its own up to the last `/`) and its sub-agents (whose native IDs are its own, a `/` and
/// one more name), each with whether it is the parent, sub-agents by start time.
pub(super) const FAMILY_SQL: &str = "
WITH (SELECT (harness, source, native_id) FROM sessions FINAL WHERE session_key = {s:UInt64}) AS me
SELECT session_key, toBool(ifNull(native_id != me.3 AND startsWith(me.3, concat(native_id, '/')), 0)) AS is_parent
FROM sessions FINAL
WHERE harness = me.1 AND source = me.2 AND session_key != {s:UInt64}
  AND ((position(me.3, '/') > 0
        AND native_id = substring(me.3, 1, length(me.3) - position(reverse(me.3), '/')))
    OR (startsWith(native_id, concat(me.3, '/'))
        AND position(substring(native_id, length(me.3) + 2), '/') = 0))
ORDER BY is_parent DESC, started_at, session_key
LIMIT {take:UInt32}";

/// Neighbours only among the sessions the caller may see.
pub(super) const VISIBLE_SOURCE: &str = "AND source IN {visible:Array(String)}";

/// A turn and its neighbours: turn IDs carry the ordinal, so all three are one range read.
pub(super) const TURN_AND_NEIGHBOURS_SQL: &str = "SELECT ?fields FROM turns FINAL WHERE session_key = {s:UInt64} \
     AND ordinal BETWEEN {lo:UInt32} AND {hi:UInt32} ORDER BY ordinal";

/// A page of a turn's events, as summaries: those after ordinal `{after}`, at most `{take}`.
pub(super) const TURN_EVENTS_SQL: &str = "
SELECT event_key, ordinal, toUInt8(event_type) AS event_type, ts, tool_name, model, summary, summary_truncated
FROM events
WHERE session_key = {s:UInt64}
  AND turn_ordinal = {t:UInt32}
  AND ordinal > {after:UInt32}
ORDER BY ordinal
LIMIT {take:UInt32}";

/// A turn's first and last events' keys, for a turn listed in pages.
pub(super) const TURN_ENDS_SQL: &str = "
SELECT argMin(event_key, ordinal), argMax(event_key, ordinal)
FROM events
WHERE session_key = {s:UInt64} AND turn_ordinal = {t:UInt32}";

/// The turns around an event (found by a scalar subquery on the event, so this statement need
/// not wait for the event's own).
pub(super) const EVENT_TURNS_SQL: &str = "
WITH (SELECT turn_ordinal FROM events WHERE session_key = {s:UInt64} AND event_key = {e:UInt64} LIMIT 1) AS o
SELECT ?fields FROM turns FINAL WHERE session_key = {s:UInt64} AND ordinal BETWEEN o - 1 AND o + 1 ORDER BY ordinal";

/// The event, and its neighbours' keys (their text is left out). Of the event's text, the
/// characters from `{from}` on, `{take}` of them; its arguments and source record only up to
/// `{bytes}` bytes each; and the sizes of all three, so a long event is never read whole. (The
/// parts have aliases of their own: ClickHouse resolves a name to an alias before a column.)
pub(super) const EVENT_SQL: &str = "
WITH (SELECT (turn_ordinal, ordinal) FROM events WHERE session_key = {s:UInt64} AND event_key = {e:UInt64} LIMIT 1) AS pos
SELECT event_key, turn_ordinal, ordinal, toUInt8(event_type) AS event_type, ts, model, originating_model, tool_name,
       exit_code, is_error,
       if(event_key = {e:UInt64}, substringUTF8(text, {from:UInt64} + 1, {take:UInt64}), '') AS text_part,
       if(event_key = {e:UInt64}, lengthUTF8(text), 0) AS text_chars,
       if(event_key = {e:UInt64}, length(text), 0) AS text_bytes,
       if(event_key = {e:UInt64} AND length(arguments) <= {bytes:UInt64}, arguments, '') AS arguments_part,
       if(event_key = {e:UInt64}, length(arguments), 0) AS arguments_bytes,
       if(event_key = {e:UInt64} AND length(raw) <= {bytes:UInt64}, raw, '') AS raw_part,
       if(event_key = {e:UInt64}, length(raw), 0) AS raw_bytes
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

/// An event with (a window of) its content, or, for its neighbours, without it.
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
    pub text_part: String,
    pub text_chars: u64,
    pub text_bytes: u64,
    pub arguments_part: String,
    pub arguments_bytes: u64,
    pub raw_part: String,
    pub raw_bytes: u64,
}
