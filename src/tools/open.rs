//! `open`: expands a session, turn or event ID into structured context with traversal links.
//!
//! Each kind is answered in one round trip: its statements run concurrently, and those that need
//! the object's position find it with a scalar subquery on the ID instead of waiting for a first
//! answer.

mod render;
mod sql;
pub(crate) mod wire;

use std::time::Instant;

use jsonschema::error::ValidationErrorKind;
use serde::Deserialize;
use serde_json::{Value, json};

use super::context::{Answer, Budget, Context, Tool, Visibility, optional_integer};
use super::envelope::ToolError;
use super::schema::{ID_PATTERN, InputRules};
use crate::config::Config;
use crate::db::{Db, DbError};
use crate::ids::{self, Id, IdError};
use crate::rows::{SessionRow, TurnRow, arguments_value, restore_text};
use crate::text::format_ts;
use crate::vocab::EventType;
use wire::{
    Content, EventInfo, EventSummary, EventTraversal, EventView, OpenData, OpenRequest,
    SessionTraversal, SessionView, TurnInfo, TurnRef, TurnSummary, TurnTraversal, TurnView,
};

/// The spec's open(event) target covers payloads up to this size; larger ones scale it.
const EVENT_TARGET_BYTES: usize = 64 * 1024;

/// The `open` tool.
pub(crate) struct Open;

/// The arguments, as the published schema accepted them.
#[derive(Debug, Deserialize)]
pub(crate) struct Args {
    id: String,
    #[serde(default, deserialize_with = "optional_integer")]
    content_offset: Option<u32>,
    #[serde(default, deserialize_with = "optional_integer")]
    offset: Option<u32>,
}

impl Tool for Open {
    const NAME: &'static str = "open";
    const TITLE: &'static str = "Open a session, turn or event";
    const DESCRIPTION: &'static str = "Expand a session:, turn: or event: ID into structured context: a session's turns, a \
             turn's events, or an event's full content, with IDs of parents and neighbours.";
    const SCHEMA_VERSION: &'static str = "moraine.mcp.open.v1";

    type Args = Args;
    type Request = OpenRequest;
    type Data = OpenData;

    fn input_schema() -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["id"],
            "properties": {
                "id": {
                    "type": "string",
                    "pattern": ID_PATTERN,
                    "description": "A session:, turn: or event: ID returned by search_sessions, list_sessions or open."
                },
                "content_offset": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "maximum": u32::MAX,
                    "description": "For an event ID: the character of the event's text to start at (content.next_content_offset of the previous part). Default 0."
                },
                "offset": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "maximum": u32::MAX,
                    "description": "For a session or turn ID: how many of its turns (or events) to skip, for the next page of a long one (data.next_offset of the previous page). Default 0."
                }
            }
        })
    }

    fn input_rules() -> InputRules {
        InputRules {
            id_fields: &["id"],
            // A blank ID is a missing value, not a malformed ID.
            special: |field, error| {
                let blank = error
                    .instance()
                    .as_str()
                    .is_some_and(|s| s.trim().is_empty());
                (field == "id"
                    && blank
                    && matches!(error.kind(), ValidationErrorKind::Pattern { .. }))
                .then(|| ToolError::invalid("id", "id must be a non-empty string"))
            },
            message: |field, _kind| match field {
                "id" => Some("id must be a non-empty string".into()),
                "content_offset" => Some("content_offset must be a non-negative integer".into()),
                "offset" => Some("offset must be a non-negative integer".into()),
                _ => None,
            },
        }
    }

    fn budget(config: &Config) -> Budget {
        Budget {
            deadline_ms: config.tools.open_deadline_ms,
            fallback_sla_ms: config.sla.open_event,
        }
    }

    async fn run(
        ctx: &Context,
        visible: &Visibility,
        args: Args,
        deadline: Instant,
    ) -> Result<Answer<Self>, ToolError> {
        let request = OpenRequest {
            id: args.id,
            content_offset: args.content_offset.map(u64::from),
            offset: args.offset.map(u64::from),
        };
        let not_found = |kind: &'static str| ToolError::NotFound {
            kind,
            id: request.id.clone(),
        };
        let id = match Id::parse(&request.id) {
            Ok(id) => id,
            Err(IdError::Malformed) => return Err(ToolError::InvalidId { field: "id".into() }),
            Err(IdError::Unknown(kind)) => return Err(not_found(kind.as_str())),
        };
        if request.content_offset.is_some() && !matches!(id, Id::Event { .. }) {
            return Err(ToolError::invalid(
                "content_offset",
                "content_offset applies to event IDs only",
            ));
        }
        if request.offset.is_some() && matches!(id, Id::Event { .. }) {
            return Err(ToolError::invalid(
                "offset",
                "offset applies to session and turn IDs (content_offset pages an event)",
            ));
        }
        let tools = &ctx.config.tools;
        let page = |max: usize| Page {
            after: args.offset.unwrap_or(0),
            max: u32::try_from(max).unwrap_or(u32::MAX),
        };
        let sla = &ctx.config.sla;
        let db = &ctx.db;
        let (data, sla_target_ms) = match id {
            Id::Session { session } => {
                let view = open_session(db, visible, session, page(tools.open_max_turns), deadline)
                    .await?
                    .ok_or_else(|| not_found("session"))?;
                let turns = view.turns.len();
                let target = if turns <= 100 {
                    sla.open_session_100
                } else {
                    scaled(sla.open_session_1000, turns, 1000)
                };
                (OpenData::Session(Box::new(view)), target)
            }
            Id::Turn { session, turn } => {
                let view = open_turn(
                    db,
                    visible,
                    session,
                    turn,
                    page(tools.open_max_events),
                    deadline,
                )
                .await?
                .ok_or_else(|| not_found("turn"))?;
                let target = scaled(sla.open_turn, view.events.len(), 100);
                (OpenData::Turn(Box::new(view)), target)
            }
            Id::Event { session, event } => {
                let window = ContentWindow {
                    from: request.content_offset.unwrap_or(0),
                    chars: ctx.config.tools.open_content_chars as u64,
                };
                let (view, bytes) = open_event(db, visible, session, event, window, deadline)
                    .await?
                    .ok_or_else(|| not_found("event"))?;
                let target = scaled(sla.open_event, bytes as usize, EVENT_TARGET_BYTES);
                (OpenData::Event(Box::new(view)), target)
            }
        };
        Ok(Answer {
            request,
            data,
            warnings: Vec::new(),
            sla_target_ms,
        })
    }

    fn render(answer: &Answer<Self>) -> String {
        render::text(&answer.data)
    }
}

/// The spec sets targets for objects up to a size (100 events, 64 KiB, 1000 turns) and lets
/// latency grow with size beyond it; the target grows in proportion.
fn scaled(target_ms: u64, size: usize, covered: usize) -> u64 {
    let multiple = size.div_ceil(covered).max(1) as u64;
    target_ms * multiple
}

/// The session's row, which every kind of `open` shows; `None` when it does not exist for the
/// caller.
async fn session_row(
    db: &Db,
    visible: &Visibility,
    session: u64,
    deadline: Instant,
) -> Result<Option<SessionRow>, DbError> {
    let row: Option<SessionRow> = db
        .read("open_session", sql::SESSION_SQL)
        .param("s", session)
        .fetch_optional(db, deadline)
        .await?;
    Ok(row.filter(|row| visible.shows(&row.source)))
}

/// The ID of the turn with `ordinal` among `turns`, if it is there.
fn turn_at(turns: &[TurnRow], session: u64, ordinal: u32) -> Option<String> {
    turns
        .iter()
        .find(|t| t.ordinal == ordinal)
        .map(|t| ids::turn_id(session, t.ordinal.into()))
}

/// Which part of a long list one answer holds: the items after the first `after`, at most
/// `max` of them.
#[derive(Debug, Clone, Copy)]
struct Page {
    after: u32,
    max: u32,
}

impl Page {
    /// How many rows to read: one more than shown tells whether more follow.
    fn take(self) -> u32 {
        self.max.saturating_add(1)
    }

    /// Keeps the page's rows of `rows` (read with [`Page::take`]), and says where the next
    /// page starts when more follow.
    fn cut<T>(self, rows: &mut Vec<T>) -> Option<u64> {
        let more = rows.len() > self.max as usize;
        rows.truncate(self.max as usize);
        more.then(|| u64::from(self.after) + u64::from(self.max))
    }
}

/// Sub-agent sessions a session's traversal lists at most.
const MAX_SUBAGENTS: u32 = 100;

async fn open_session(
    db: &Db,
    visible: &Visibility,
    session: u64,
    page: Page,
    deadline: Instant,
) -> Result<Option<SessionView>, DbError> {
    let neighbours_sql = crate::db::splice(
        sql::NEIGHBOUR_SESSIONS_SQL,
        &[("visible", visible.filter(sql::VISIBLE_SOURCE))],
    );
    let (info, turns, neighbours, family) = tokio::try_join!(
        session_row(db, visible, session, deadline),
        db.read("open_session_turns", sql::SESSION_TURNS_SQL)
            .param("s", session)
            .param("after", page.after)
            .param("take", page.take())
            .fetch_all::<TurnRow>(db, deadline),
        db.read("open_session_neighbours", &neighbours_sql)
            .param("s", session)
            .param("visible", visible.sources())
            .fetch_optional::<(Option<u64>, Option<u64>)>(db, deadline),
        db.read("open_session_family", sql::FAMILY_SQL)
            .param("s", session)
            .param("take", MAX_SUBAGENTS + 1)
            .fetch_all::<(u64, bool)>(db, deadline),
    )?;
    let Some(info) = info else {
        return Ok(None);
    };
    let parent = family.iter().find(|(_, is_parent)| *is_parent);
    let subagents: Vec<String> = family
        .iter()
        .filter(|(_, is_parent)| !is_parent)
        .take(MAX_SUBAGENTS as usize)
        .map(|(key, _)| ids::session_id(*key))
        .collect();
    let mut turns = turns;
    let next_offset = page.cut(&mut turns);
    let (previous, next) = neighbours.unwrap_or((None, None));
    Ok(Some(SessionView {
        session: (&info).into(),
        turns: turns.iter().map(TurnSummary::from).collect(),
        truncated: next_offset.is_some(),
        next_offset,
        traversal: SessionTraversal {
            previous_session_id: previous.map(ids::session_id),
            next_session_id: next.map(ids::session_id),
            parent_session_id: parent.map(|(key, _)| ids::session_id(*key)),
            subagent_session_ids: subagents,
        },
    }))
}

async fn open_turn(
    db: &Db,
    visible: &Visibility,
    session: u64,
    turn: u64,
    page: Page,
    deadline: Instant,
) -> Result<Option<TurnView>, DbError> {
    let Ok(turn) = u32::try_from(turn) else {
        return Ok(None);
    };
    let (info, turns, events) = tokio::try_join!(
        session_row(db, visible, session, deadline),
        db.read("open_turn", sql::TURN_AND_NEIGHBOURS_SQL)
            .param("s", session)
            .param("lo", turn.saturating_sub(1))
            .param("hi", turn.saturating_add(1))
            .fetch_all::<TurnRow>(db, deadline),
        db.read("open_turn_events", sql::TURN_EVENTS_SQL)
            .param("s", session)
            .param("t", turn)
            .param("after", page.after)
            .param("take", page.take())
            .fetch_all::<sql::EventSummaryRow>(db, deadline),
    )?;
    let (Some(info), Some(this)) = (info, turns.iter().find(|t| t.ordinal == turn)) else {
        return Ok(None);
    };
    let mut events = events;
    let next_offset = page.cut(&mut events);
    let event_id = |e: &sql::EventSummaryRow| ids::event_id(session, e.event_key);
    // The turn's own first and last events, wherever the page lies in it.
    let ends = if page.after == 0 && next_offset.is_none() {
        (events.first().map(event_id), events.last().map(event_id))
    } else {
        let keys: Option<(u64, u64)> = db
            .read("open_turn_ends", sql::TURN_ENDS_SQL)
            .param("s", session)
            .param("t", turn)
            .fetch_optional(db, deadline)
            .await?;
        keys.filter(|(first, _)| *first != 0)
            .map_or((None, None), |(first, last)| {
                (
                    Some(ids::event_id(session, first)),
                    Some(ids::event_id(session, last)),
                )
            })
    };
    Ok(Some(TurnView {
        turn: TurnInfo::from(this),
        session: (&info).into(),
        summary: TurnSummary::from(this).into(),
        traversal: TurnTraversal {
            session_id: ids::session_id(session),
            previous_turn_id: turn
                .checked_sub(1)
                .and_then(|o| turn_at(&turns, session, o)),
            next_turn_id: turn_at(&turns, session, turn + 1),
            first_event_id: ends.0,
            last_event_id: ends.1,
        },
        truncated: next_offset.is_some(),
        next_offset,
        events: events
            .iter()
            .map(|e| EventSummary {
                id: event_id(e),
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

/// The part of an event's text one `open` returns.
#[derive(Debug, Clone, Copy)]
struct ContentWindow {
    /// The first character.
    from: u64,
    /// Characters at most.
    chars: u64,
}

impl ContentWindow {
    /// The largest arguments or source record returned whole, in bytes.
    fn max_bytes(self) -> u64 {
        self.chars * 4
    }
}

/// The event, and the size of its content (text and arguments, in bytes).
async fn open_event(
    db: &Db,
    visible: &Visibility,
    session: u64,
    event: u64,
    window: ContentWindow,
    deadline: Instant,
) -> Result<Option<(EventView, u64)>, DbError> {
    let (info, turns, events) = tokio::try_join!(
        session_row(db, visible, session, deadline),
        db.read("open_event_turns", sql::EVENT_TURNS_SQL)
            .param("s", session)
            .param("e", event)
            .fetch_all::<TurnRow>(db, deadline),
        db.read("open_event", sql::EVENT_SQL)
            .param("s", session)
            .param("e", event)
            .param("from", window.from)
            .param("take", window.chars)
            .param("bytes", window.max_bytes())
            .fetch_all::<sql::EventRow>(db, deadline),
    )?;
    let (Some(info), Some(this)) = (info, events.iter().find(|e| e.event_key == event)) else {
        return Ok(None);
    };
    let turn = turns.iter().find(|t| t.ordinal == this.turn_ordinal);
    let event_at = |ordinal: u32| {
        events
            .iter()
            .find(|e| e.ordinal == ordinal)
            .map(|e| ids::event_id(session, e.event_key))
    };
    let turn_id = ids::turn_id(session, this.turn_ordinal.into());
    let content_bytes = this.text_bytes + this.arguments_bytes;
    let view = EventView {
        event: EventInfo {
            id: ids::event_id(session, event),
            session_id: ids::session_id(session),
            turn_id: turn_id.clone(),
            ordinal: this.ordinal,
            event_type: EventType::from_code(this.event_type).unwrap_or(EventType::Unknown),
            timestamp: format_ts(this.ts),
            terminal: turn.is_some_and(|t| t.terminal_event_key == event),
            model: non_empty(&this.model),
            originating_model: non_empty(&this.originating_model),
            tool_name: non_empty(&this.tool_name),
        },
        content: content(this, window),
        session: (&info).into(),
        turn: TurnRef {
            id: turn_id.clone(),
            ordinal: this.turn_ordinal,
            completed: turn.is_some_and(|t| t.completed),
        },
        traversal: EventTraversal {
            session_id: ids::session_id(session),
            turn_id,
            previous_event_id: this.ordinal.checked_sub(1).and_then(event_at),
            next_event_id: event_at(this.ordinal + 1),
            previous_turn_id: this
                .turn_ordinal
                .checked_sub(1)
                .and_then(|o| turn_at(&turns, session, o)),
            next_turn_id: turn_at(&turns, session, this.turn_ordinal + 1),
        },
    };
    Ok(Some((view, content_bytes)))
}

/// An event's content (its text within `window`): what it carries beyond the text depends on
/// its type.
fn content(row: &sql::EventRow, window: ContentWindow) -> Content {
    let event_type = EventType::from_code(row.event_type).unwrap_or(EventType::Unknown);
    let shown = window.from + row.text_part.chars().count() as u64;
    let whole = window.from == 0 && shown >= row.text_chars;
    let tool_name = non_empty(&row.tool_name);
    let (format, tool_name, arguments, exit_code, is_error) = match event_type {
        EventType::ToolCall => (
            "tool_call",
            tool_name,
            Some(oversized_or(
                row.arguments_bytes,
                window,
                "arguments",
                || arguments_value(&row.arguments_part),
            )),
            None,
            None,
        ),
        EventType::ToolResponse => (
            "tool_response",
            tool_name,
            None,
            Some(row.exit_code),
            Some(row.is_error),
        ),
        other => (
            if other == EventType::Reasoning {
                "reasoning"
            } else {
                "text"
            },
            None,
            None,
            row.exit_code.map(Some),
            row.is_error.then_some(true),
        ),
    };
    // The record stores its text once, in the text column; where that is not returned whole,
    // the record shows a placeholder instead of a part of it.
    let raw = oversized_or(row.raw_bytes, window, "source record", || {
        let text = if whole {
            row.text_part.as_str()
        } else {
            TEXT_PLACEHOLDER
        };
        let record = restore_text(&row.raw_part, text);
        serde_json::from_str(&record).unwrap_or(Value::String(record))
    });
    Content {
        format: format.into(),
        text: row.text_part.clone(),
        truncated: !whole,
        next_content_offset: (shown < row.text_chars).then_some(shown),
        tool_name,
        arguments,
        exit_code,
        is_error,
        raw,
    }
}

/// Stands for the event's text in a source record returned without it.
const TEXT_PLACEHOLDER: &str = "<content.text>";

/// `value()`, or a note that `what` (of `bytes` bytes) is too large to return.
fn oversized_or(
    bytes: u64,
    window: ContentWindow,
    what: &str,
    value: impl FnOnce() -> Value,
) -> Value {
    if bytes <= window.max_bytes() {
        value()
    } else {
        Value::String(format!(
            "({what} of {bytes} bytes, larger than the {} bytes open returns)",
            window.max_bytes()
        ))
    }
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}
