//! `open` on the wire: a session, turn or event view with its traversal links, and how each is
//! made from the stored rows.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::ids;
use crate::rows::{SessionRow, TurnRow};
use crate::text::format_ts;
use crate::tools::project::Project;
use crate::vocab::EventType;

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct OpenRequest {
    pub id: String,
    /// Where in an event's text (in characters) the returned text starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_offset: Option<u64>,
    /// How many of a session's turns (or a turn's events) the list skips.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}

/// What was opened; `kind` says which.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum OpenData {
    Session(Box<SessionView>),
    Turn(Box<TurnView>),
    Event(Box<EventView>),
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct SessionView {
    pub session: SessionInfo,
    /// Every known turn, by ordinal; for a session of more turns than one answer lists
    /// (`truncated`), a page of them.
    pub turns: Vec<TurnSummary>,
    /// More turns follow those listed.
    pub truncated: bool,
    /// The `offset` that lists the turns after these, when there are more.
    pub next_offset: Option<u64>,
    pub traversal: SessionTraversal,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct SessionInfo {
    pub id: String,
    pub title: String,
    pub source: String,
    /// The repository the session worked in, from the working directory its log records.
    pub project: Option<Project>,
    pub harness: String,
    /// The model that last answered in the session, where the log names one.
    pub model: Option<String>,
    pub started_at: String,
    pub updated_at: String,
    pub completed: bool,
    pub turn_count: u32,
    pub event_count: u32,
    pub mode: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct SessionTraversal {
    /// The session that started just before this one.
    pub previous_session_id: Option<String>,
    /// The session that started just after this one.
    pub next_session_id: Option<String>,
    /// The session this one is a sub-agent of (same harness and source), if it is one.
    pub parent_session_id: Option<String>,
    /// The sessions of this one's sub-agents, by start time (at most 100).
    pub subagent_session_ids: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct TurnSummary {
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
pub(crate) struct Preview {
    pub event_id: String,
    pub text: String,
    pub truncated: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct TurnRefs {
    pub turn_id: String,
    pub terminal_event_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct TurnView {
    pub turn: TurnInfo,
    pub session: SessionRef,
    pub summary: TurnDigest,
    /// Every known event of the turn, by ordinal, as compact summaries; for a turn of more
    /// events than one answer lists (`truncated`), a page of them.
    pub events: Vec<EventSummary>,
    /// More events follow those listed.
    pub truncated: bool,
    /// The `offset` that lists the events after these, when there are more.
    pub next_offset: Option<u64>,
    pub traversal: TurnTraversal,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct TurnInfo {
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
pub(crate) struct SessionRef {
    pub id: String,
    pub title: String,
    pub source: String,
    /// The repository the session worked in, from the working directory its log records.
    pub project: Option<Project>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct TurnDigest {
    pub user_input: Option<Preview>,
    pub final_response: Option<Preview>,
    pub tools_called: Vec<String>,
    pub event_types: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct EventSummary {
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
pub(crate) struct TurnTraversal {
    pub session_id: String,
    pub previous_turn_id: Option<String>,
    pub next_turn_id: Option<String>,
    pub first_event_id: Option<String>,
    pub last_event_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct EventView {
    pub event: EventInfo,
    pub content: Content,
    pub session: SessionRef,
    pub turn: TurnRef,
    pub traversal: EventTraversal,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct EventInfo {
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
pub(crate) struct Content {
    /// `text`, `reasoning`, `tool_call` or `tool_response`.
    pub format: String,
    /// The text: the message, the reasoning, the rendered call, or the tool's output; whole,
    /// unless it is longer than the server's limit per call (`truncated`).
    pub text: String,
    /// `text` is a part of the event's text: it starts at the requested `content_offset`, or
    /// stops at the limit.
    pub truncated: bool,
    /// The `content_offset` of the text that follows `text`, when there is more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_content_offset: Option<u64>,
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
    /// The source log record this event came from (credentials redacted). Where the event's
    /// text is not returned whole, the record holds `"<content.text>"` in its place; a record
    /// larger than the limit is replaced by a note saying so.
    pub raw: Value,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct TurnRef {
    pub id: String,
    pub ordinal: u32,
    pub completed: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct EventTraversal {
    pub session_id: String,
    pub turn_id: String,
    /// Adjacent events within the same turn (null at the turn's ends).
    pub previous_event_id: Option<String>,
    pub next_event_id: Option<String>,
    pub previous_turn_id: Option<String>,
    pub next_turn_id: Option<String>,
}

impl From<&SessionRow> for SessionInfo {
    fn from(row: &SessionRow) -> Self {
        Self {
            id: ids::session_id(row.session_key),
            title: row.title.clone(),
            source: row.source.clone(),
            project: Project::of(&row.cwd),
            harness: row.harness.clone(),
            model: (!row.model.is_empty()).then(|| row.model.clone()),
            started_at: format_ts(row.started_at),
            updated_at: format_ts(row.updated_at),
            completed: row.completed,
            turn_count: row.turn_count,
            event_count: row.event_count,
            mode: row.mode.clone(),
        }
    }
}

impl From<&SessionRow> for SessionRef {
    fn from(row: &SessionRow) -> Self {
        Self {
            id: ids::session_id(row.session_key),
            title: row.title.clone(),
            source: row.source.clone(),
            project: Project::of(&row.cwd),
        }
    }
}

impl From<&TurnRow> for TurnSummary {
    fn from(row: &TurnRow) -> Self {
        let session = row.session_key;
        let preview = |key: u64, text: &str, truncated: bool| {
            (key != 0).then(|| Preview {
                event_id: ids::event_id(session, key),
                text: text.to_owned(),
                truncated,
            })
        };
        let terminal = ids::optional_event_id(session, row.terminal_event_key);
        Self {
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
}

impl From<&TurnRow> for TurnInfo {
    fn from(row: &TurnRow) -> Self {
        Self {
            id: ids::turn_id(row.session_key, row.ordinal.into()),
            session_id: ids::session_id(row.session_key),
            ordinal: row.ordinal,
            completed: row.completed,
            terminal_event_id: ids::optional_event_id(row.session_key, row.terminal_event_key),
            event_count: row.event_count,
            started_at: format_ts(row.started_at),
            updated_at: format_ts(row.updated_at),
        }
    }
}

impl From<TurnSummary> for TurnDigest {
    fn from(summary: TurnSummary) -> Self {
        Self {
            user_input: summary.user_input,
            final_response: summary.final_response,
            tools_called: summary.tools_called,
            event_types: summary.event_types,
        }
    }
}
