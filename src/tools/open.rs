//! `open`: expands a session, turn or event ID into structured context with traversal links.
//!
//! Each kind is answered in one round trip: its queries run concurrently, and those that need
//! the object's position find it with a scalar subquery on the ID instead of waiting for a
//! first answer.

use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::envelope::{Envelope, ToolError};
use super::{Context, Success, format_ts, optional_str};
use crate::ids::{self, Id, IdError};
use crate::vocab::EventType;

pub const NAME: &str = "open";
pub const SCHEMA_VERSION: &str = "moraine.mcp.open.v1";
/// The spec's open(event) target covers payloads up to this size; larger ones scale it.
const EVENT_TARGET_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct OpenRequest {
    pub id: String,
}

/// What was opened; `kind` says which.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OpenData {
    Session(Box<SessionView>),
    Turn(Box<TurnView>),
    Event(Box<EventView>),
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SessionView {
    pub session: SessionInfo,
    /// Every known turn, by ordinal.
    pub turns: Vec<TurnSummary>,
    pub traversal: SessionTraversal,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SessionInfo {
    pub id: String,
    pub title: String,
    pub source: String,
    pub harness: String,
    pub started_at: String,
    pub updated_at: String,
    pub completed: bool,
    pub turn_count: u32,
    pub event_count: u32,
    pub mode: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SessionTraversal {
    /// The session that started just before this one.
    pub previous_session_id: Option<String>,
    /// The session that started just after this one.
    pub next_session_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TurnSummary {
    pub id: String,
    pub ordinal: u32,
    pub completed: bool,
    pub terminal_event_id: Option<String>,
    pub event_count: u32,
    pub started_at: String,
    pub updated_at: String,
    pub user_input: Option<Preview>,
    pub final_response: Option<Preview>,
    /// Unique tool names, in first-seen order.
    pub tools_called: Vec<String>,
    /// Unique event types, in first-seen order.
    pub event_types: Vec<String>,
    pub open: TurnRefs,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Preview {
    pub event_id: String,
    pub text: String,
    pub truncated: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TurnRefs {
    pub turn_id: String,
    pub terminal_event_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TurnView {
    pub turn: TurnInfo,
    pub session: SessionRef,
    pub summary: TurnDigest,
    /// Every known event of the turn, by ordinal, as compact summaries.
    pub events: Vec<EventSummary>,
    pub traversal: TurnTraversal,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TurnInfo {
    pub id: String,
    pub session_id: String,
    pub ordinal: u32,
    pub completed: bool,
    pub terminal_event_id: Option<String>,
    pub event_count: u32,
    pub started_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SessionRef {
    pub id: String,
    pub title: String,
    pub source: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TurnDigest {
    pub user_input: Option<Preview>,
    pub final_response: Option<Preview>,
    pub tools_called: Vec<String>,
    pub event_types: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EventSummary {
    pub id: String,
    pub ordinal: u32,
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub timestamp: String,
    pub terminal: bool,
    pub tool_name: Option<String>,
    pub model: Option<String>,
    pub summary: String,
    pub truncated: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TurnTraversal {
    pub session_id: String,
    pub previous_turn_id: Option<String>,
    pub next_turn_id: Option<String>,
    pub first_event_id: Option<String>,
    pub last_event_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EventView {
    pub event: EventInfo,
    pub content: Content,
    pub session: SessionRef,
    pub turn: TurnRef,
    pub traversal: EventTraversal,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EventInfo {
    pub id: String,
    pub session_id: String,
    pub turn_id: String,
    pub ordinal: u32,
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub timestamp: String,
    pub terminal: bool,
    pub model: Option<String>,
    pub originating_model: Option<String>,
    pub tool_name: Option<String>,
}

/// The event's full content.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Content {
    /// `text`, `reasoning`, `tool_call` or `tool_response`.
    pub format: String,
    /// The full text: the message, the reasoning, the rendered call, or the tool's output.
    pub text: String,
    /// Always false: open returns full content.
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Tool-call arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The tool's exit status, where the log recorded one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<Option<i32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The source log record this event came from (credentials redacted).
    pub raw: Value,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TurnRef {
    pub id: String,
    pub ordinal: u32,
    pub completed: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EventTraversal {
    pub session_id: String,
    pub turn_id: String,
    /// Adjacent events within the same turn (null at the turn's ends).
    pub previous_event_id: Option<String>,
    pub next_event_id: Option<String>,
    pub previous_turn_id: Option<String>,
    pub next_turn_id: Option<String>,
}

pub type OpenEnvelope = Envelope<OpenRequest, OpenData>;

#[derive(Debug, clickhouse::Row, Deserialize)]
struct SessionRow {
    session_key: u64,
    title: String,
    harness: String,
    source: String,
    started_at: i64,
    updated_at: i64,
    completed: bool,
    turn_count: u32,
    event_count: u32,
    mode: String,
}

#[derive(Debug, clickhouse::Row, Deserialize)]
struct TurnRow {
    ordinal: u32,
    completed: bool,
    terminal_event_key: u64,
    event_count: u32,
    started_at: i64,
    updated_at: i64,
    user_event_key: u64,
    user_preview: String,
    user_truncated: bool,
    final_event_key: u64,
    final_preview: String,
    final_truncated: bool,
    tools_called: Vec<String>,
    event_types: Vec<String>,
}

#[derive(Debug, clickhouse::Row, Deserialize)]
struct EventRow {
    event_key: u64,
    ordinal: u32,
    event_type: u8,
    ts: i64,
    tool_name: String,
    model: String,
    summary: String,
    summary_truncated: bool,
}

#[derive(Debug, clickhouse::Row, Deserialize)]
struct FullEventRow {
    event_key: u64,
    turn_ordinal: u32,
    ordinal: u32,
    event_type: u8,
    ts: i64,
    model: String,
    originating_model: String,
    tool_name: String,
    exit_code: Option<i32>,
    is_error: bool,
    text: String,
    arguments: String,
    raw: String,
}

const SESSION_SQL: &str = "SELECT session_key, title, harness, source, started_at, updated_at, completed, turn_count, \
    event_count, mode FROM sessions FINAL WHERE session_key = {s:UInt64}";

const TURN_COLUMNS: &str = "ordinal, completed, terminal_event_key, event_count, started_at, updated_at, \
    user_event_key, user_preview, user_truncated, final_event_key, final_preview, final_truncated, tools_called, event_types";

const NEIGHBOUR_SESSIONS_SQL: &str = "
WITH (SELECT (started_at, session_key) FROM sessions FINAL WHERE session_key = {s:UInt64}) AS me
SELECT
    (SELECT session_key FROM sessions FINAL WHERE (started_at, session_key) < me ORDER BY started_at DESC, session_key DESC LIMIT 1),
    (SELECT session_key FROM sessions FINAL WHERE (started_at, session_key) > me ORDER BY started_at ASC, session_key ASC LIMIT 1)";

const TURN_EVENTS_SQL: &str = "
SELECT event_key, ordinal, toUInt8(event_type) AS event_type, ts, tool_name, model, summary, summary_truncated
FROM events
WHERE session_key = {s:UInt64}
  AND turn_ordinal = {t:UInt32}
ORDER BY ordinal";

/// The event, and its neighbours' keys (their text is left out).
const EVENT_SQL: &str = "
WITH (SELECT (turn_ordinal, ordinal) FROM events WHERE session_key = {s:UInt64} AND event_key = {e:UInt64} LIMIT 1) AS pos
SELECT event_key, turn_ordinal, ordinal, toUInt8(event_type) AS event_type, ts, model, originating_model, tool_name,
       exit_code, is_error,
       if(event_key = {e:UInt64}, text, '') AS text,
       if(event_key = {e:UInt64}, arguments, '') AS arguments,
       if(event_key = {e:UInt64}, raw, '') AS raw
FROM events
WHERE session_key = {s:UInt64} AND turn_ordinal = pos.1 AND ordinal BETWEEN pos.2 - 1 AND pos.2 + 1
ORDER BY ordinal";

pub fn canonical(args: &Map<String, Value>) -> OpenRequest {
    OpenRequest {
        id: optional_str(args, "id").unwrap_or_default(),
    }
}

pub async fn run(
    ctx: &Context,
    args: &Map<String, Value>,
    deadline: Instant,
) -> Result<Success, ToolError> {
    let request = canonical(args);
    let id = match Id::parse(&request.id) {
        Ok(id) => id,
        Err(IdError::Malformed) => return Err(ToolError::InvalidId { field: "id".into() }),
        Err(IdError::Unknown(kind)) => {
            return Err(ToolError::NotFound {
                kind: kind.as_str(),
                id: request.id,
            });
        }
    };
    let db_error = |e| ToolError::from_db(e, ctx.config.tools.open_deadline_ms);
    let sla = &ctx.config.sla;
    let (data, sla_target_ms) = match id {
        Id::Session { session } => {
            let view = open_session(ctx, session, deadline)
                .await
                .map_err(db_error)?;
            let view = view.ok_or_else(|| ToolError::NotFound {
                kind: "session",
                id: request.id.clone(),
            })?;
            let turns = view.turns.len();
            let target = if turns <= 100 {
                sla.open_session_100
            } else {
                scaled(sla.open_session_1000, turns, 1000)
            };
            (OpenData::Session(Box::new(view)), target)
        }
        Id::Turn { session, turn } => {
            let view = open_turn(ctx, session, turn, deadline)
                .await
                .map_err(db_error)?;
            let view = view.ok_or_else(|| ToolError::NotFound {
                kind: "turn",
                id: request.id.clone(),
            })?;
            let target = scaled(sla.open_turn, view.events.len(), 100);
            (OpenData::Turn(Box::new(view)), target)
        }
        Id::Event { session, event } => {
            let view = open_event(ctx, session, event, deadline)
                .await
                .map_err(db_error)?;
            let view = view.ok_or_else(|| ToolError::NotFound {
                kind: "event",
                id: request.id.clone(),
            })?;
            let bytes = view.content.text.len()
                + view
                    .content
                    .arguments
                    .as_ref()
                    .map_or(0, |a| a.to_string().len());
            let target = scaled(sla.open_event, bytes, EVENT_TARGET_BYTES);
            (OpenData::Event(Box::new(view)), target)
        }
    };
    let text = super::render::open(&data);
    Ok(Success::new(
        SCHEMA_VERSION,
        &request,
        &data,
        Vec::new(),
        sla_target_ms,
        text,
    ))
}

/// The spec sets targets for objects up to a size (100 events, 64 KiB, 1000 turns) and lets
/// latency grow with size beyond it; the target grows in proportion.
fn scaled(target_ms: u64, size: usize, covered: usize) -> u64 {
    let multiple = size.div_ceil(covered).max(1) as u64;
    target_ms * multiple
}

async fn open_session(
    ctx: &Context,
    session: u64,
    deadline: Instant,
) -> Result<Option<SessionView>, crate::db::DbError> {
    let db = &ctx.db;
    let turns_sql = format!(
        "SELECT {TURN_COLUMNS} FROM turns FINAL WHERE session_key = {{s:UInt64}} ORDER BY ordinal"
    );
    let (info, turns, neighbours) = tokio::try_join!(
        db.read("open_session", SESSION_SQL)
            .param("s", session)
            .fetch_optional::<SessionRow>(db, deadline),
        db.read("open_session_turns", &turns_sql)
            .param("s", session)
            .fetch_all::<TurnRow>(db, deadline),
        db.read("open_session_neighbours", NEIGHBOUR_SESSIONS_SQL)
            .param("s", session)
            .fetch_optional::<(Option<u64>, Option<u64>)>(db, deadline),
    )?;
    let Some(info) = info else {
        return Ok(None);
    };
    let (previous, next) = neighbours.unwrap_or((None, None));
    Ok(Some(SessionView {
        session: session_info(&info),
        turns: turns.iter().map(|t| turn_summary(session, t)).collect(),
        traversal: SessionTraversal {
            previous_session_id: previous.map(ids::session_id),
            next_session_id: next.map(ids::session_id),
        },
    }))
}

async fn open_turn(
    ctx: &Context,
    session: u64,
    turn: u64,
    deadline: Instant,
) -> Result<Option<TurnView>, crate::db::DbError> {
    let db = &ctx.db;
    // Turn IDs carry the ordinal, so the turn and both neighbours come from one range read.
    let Ok(turn) = u32::try_from(turn) else {
        return Ok(None);
    };
    let turns_sql = format!(
        "SELECT {TURN_COLUMNS} FROM turns FINAL WHERE session_key = {{s:UInt64}} \
         AND ordinal BETWEEN {{lo:UInt32}} AND {{hi:UInt32}} ORDER BY ordinal"
    );
    let (info, turns, events) = tokio::try_join!(
        db.read("open_turn_session", SESSION_SQL)
            .param("s", session)
            .fetch_optional::<SessionRow>(db, deadline),
        db.read("open_turn", &turns_sql)
            .param("s", session)
            .param("lo", turn.saturating_sub(1))
            .param("hi", turn.saturating_add(1))
            .fetch_all::<TurnRow>(db, deadline),
        db.read("open_turn_events", TURN_EVENTS_SQL)
            .param("s", session)
            .param("t", turn)
            .fetch_all::<EventRow>(db, deadline),
    )?;
    let (Some(info), Some(position)) = (info, turns.iter().position(|t| t.ordinal == turn)) else {
        return Ok(None);
    };
    let this = &turns[position];
    let neighbour = |ordinal: u32| {
        turns
            .iter()
            .find(|t| t.ordinal == ordinal)
            .map(|t| ids::turn_id(session, t.ordinal.into()))
    };
    let summary = turn_summary(session, this);
    Ok(Some(TurnView {
        turn: TurnInfo {
            id: ids::turn_id(session, turn.into()),
            session_id: ids::session_id(session),
            ordinal: this.ordinal,
            completed: this.completed,
            terminal_event_id: ids::optional_event_id(session, this.terminal_event_key),
            event_count: this.event_count,
            started_at: format_ts(this.started_at),
            updated_at: format_ts(this.updated_at),
        },
        session: session_ref(&info),
        summary: TurnDigest {
            user_input: summary.user_input,
            final_response: summary.final_response,
            tools_called: summary.tools_called,
            event_types: summary.event_types,
        },
        traversal: TurnTraversal {
            session_id: ids::session_id(session),
            previous_turn_id: this.ordinal.checked_sub(1).and_then(neighbour),
            next_turn_id: neighbour(this.ordinal + 1),
            first_event_id: events.first().map(|e| ids::event_id(session, e.event_key)),
            last_event_id: events.last().map(|e| ids::event_id(session, e.event_key)),
        },
        events: events
            .iter()
            .map(|e| EventSummary {
                id: ids::event_id(session, e.event_key),
                ordinal: e.ordinal,
                event_type: EventType::from_code(e.event_type).unwrap_or(EventType::Unknown),
                timestamp: format_ts(e.ts),
                terminal: e.event_key == this.terminal_event_key,
                tool_name: non_empty(&e.tool_name),
                model: non_empty(&e.model),
                summary: e.summary.clone(),
                truncated: e.summary_truncated,
            })
            .collect(),
    }))
}

async fn open_event(
    ctx: &Context,
    session: u64,
    event: u64,
    deadline: Instant,
) -> Result<Option<EventView>, crate::db::DbError> {
    let db = &ctx.db;
    let turns_sql = format!(
        "WITH (SELECT turn_ordinal FROM events WHERE session_key = {{s:UInt64}} AND event_key = {{e:UInt64}} LIMIT 1) AS o \
         SELECT {TURN_COLUMNS} FROM turns FINAL WHERE session_key = {{s:UInt64}} AND ordinal BETWEEN o - 1 AND o + 1 ORDER BY ordinal"
    );
    let (info, turns, events) = tokio::try_join!(
        db.read("open_event_session", SESSION_SQL)
            .param("s", session)
            .fetch_optional::<SessionRow>(db, deadline),
        db.read("open_event_turns", &turns_sql)
            .param("s", session)
            .param("e", event)
            .fetch_all::<TurnRow>(db, deadline),
        db.read("open_event", EVENT_SQL)
            .param("s", session)
            .param("e", event)
            .fetch_all::<FullEventRow>(db, deadline),
    )?;
    let (Some(info), Some(this)) = (info, events.iter().find(|e| e.event_key == event)) else {
        return Ok(None);
    };
    let turn = turns.iter().find(|t| t.ordinal == this.turn_ordinal);
    let turn_neighbour = |ordinal: u32| {
        turns
            .iter()
            .find(|t| t.ordinal == ordinal)
            .map(|t| ids::turn_id(session, t.ordinal.into()))
    };
    let event_neighbour = |ordinal: u32| {
        events
            .iter()
            .find(|e| e.ordinal == ordinal)
            .map(|e| ids::event_id(session, e.event_key))
    };
    let event_type = EventType::from_code(this.event_type).unwrap_or(EventType::Unknown);
    let record = crate::ingest::rows::restore_text(&this.raw, &this.text);
    let raw: Value = serde_json::from_str(&record).unwrap_or(Value::String(record));
    let tool_name = non_empty(&this.tool_name);
    // What the content carries beyond the text depends on the event type.
    let (format, content_tool, arguments, exit_code, is_error) = match event_type {
        EventType::ToolCall => (
            "tool_call",
            tool_name.clone(),
            Some(crate::ingest::draft::parse_arguments(&this.arguments)),
            None,
            None,
        ),
        EventType::ToolResponse => (
            "tool_response",
            tool_name.clone(),
            None,
            Some(this.exit_code),
            Some(this.is_error),
        ),
        other => (
            if other == EventType::Reasoning {
                "reasoning"
            } else {
                "text"
            },
            None,
            None,
            this.exit_code.map(Some),
            this.is_error.then_some(true),
        ),
    };
    let content = Content {
        format: format.into(),
        text: this.text.clone(),
        truncated: false,
        tool_name: content_tool,
        arguments,
        exit_code,
        is_error,
        raw,
    };
    let turn_id = ids::turn_id(session, this.turn_ordinal.into());
    Ok(Some(EventView {
        event: EventInfo {
            id: ids::event_id(session, event),
            session_id: ids::session_id(session),
            turn_id: turn_id.clone(),
            ordinal: this.ordinal,
            event_type,
            timestamp: format_ts(this.ts),
            terminal: turn.is_some_and(|t| t.terminal_event_key == event),
            model: non_empty(&this.model),
            originating_model: non_empty(&this.originating_model),
            tool_name,
        },
        content,
        session: session_ref(&info),
        turn: TurnRef {
            id: turn_id.clone(),
            ordinal: this.turn_ordinal,
            completed: turn.is_some_and(|t| t.completed),
        },
        traversal: EventTraversal {
            session_id: ids::session_id(session),
            turn_id,
            previous_event_id: this.ordinal.checked_sub(1).and_then(event_neighbour),
            next_event_id: event_neighbour(this.ordinal + 1),
            previous_turn_id: this.turn_ordinal.checked_sub(1).and_then(turn_neighbour),
            next_turn_id: turn_neighbour(this.turn_ordinal + 1),
        },
    }))
}

fn session_info(row: &SessionRow) -> SessionInfo {
    SessionInfo {
        id: ids::session_id(row.session_key),
        title: row.title.clone(),
        source: row.source.clone(),
        harness: row.harness.clone(),
        started_at: format_ts(row.started_at),
        updated_at: format_ts(row.updated_at),
        completed: row.completed,
        turn_count: row.turn_count,
        event_count: row.event_count,
        mode: row.mode.clone(),
    }
}

fn session_ref(row: &SessionRow) -> SessionRef {
    SessionRef {
        id: ids::session_id(row.session_key),
        title: row.title.clone(),
        source: row.source.clone(),
    }
}

fn turn_summary(session: u64, row: &TurnRow) -> TurnSummary {
    let preview = |key: u64, text: &str, truncated: bool| {
        (key != 0).then(|| Preview {
            event_id: ids::event_id(session, key),
            text: text.to_owned(),
            truncated,
        })
    };
    let terminal = ids::optional_event_id(session, row.terminal_event_key);
    TurnSummary {
        id: ids::turn_id(session, row.ordinal.into()),
        ordinal: row.ordinal,
        completed: row.completed,
        terminal_event_id: terminal.clone(),
        event_count: row.event_count,
        started_at: format_ts(row.started_at),
        updated_at: format_ts(row.updated_at),
        user_input: preview(row.user_event_key, &row.user_preview, row.user_truncated),
        final_response: preview(row.final_event_key, &row.final_preview, row.final_truncated),
        tools_called: row.tools_called.clone(),
        event_types: row.event_types.clone(),
        open: TurnRefs {
            turn_id: ids::turn_id(session, row.ordinal.into()),
            terminal_event_id: terminal,
        },
    }
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}
