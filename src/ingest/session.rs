//! Turns a session's draft events into stored rows: turns, ordinals, completion and keys.
//!
//! The state here is everything needed to continue a session later, so it is saved in the
//! file's checkpoint: only a session's last turn can still grow, so it is the only open turn.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::harness::draft::{Draft, Ending};
use std::sync::Arc;

use crate::rows::{EventRow, SessionRow, TurnRow};
use crate::semantic::Embedder;
use crate::text::{floor_char_boundary, preview};
use crate::tokenize::Indexer;
use crate::vocab::{EventType, SessionMode};

/// Event keys hold the event time in milliseconds in their high 44 bits and a per-session
/// sequence number in the low 20, so keys sort by time (the spec's tie-break) and stay unique.
const SEQUENCE_BITS: u32 = 20;
const SEQUENCE_SPAN: u64 = (1 << SEQUENCE_BITS) - 1;
const TIME_MASK: u64 = (1 << (64 - SEQUENCE_BITS)) - 1;

/// How far back among the rows not yet written a result logged before its call is looked for.
const EARLY_RESULT_ROWS: usize = 1024;

/// Longest session title, in characters.
pub const TITLE_CHARS: usize = 120;

/// Settings that shape rows but are not session state.
#[derive(Debug, Clone)]
pub struct BuildSettings {
    pub preview_chars: usize,
    pub max_indexed_bytes: usize,
    /// Times later than this (ms since the epoch; 0: none) are a wrong clock on the machine
    /// that wrote the log: shown and sorted as this, so such a session does not stay on top of
    /// "newest first" for ever. Event IDs keep the logged time.
    pub not_after: i64,
    /// The model that gives each session its vector (none: sessions get none).
    pub embedder: Option<Arc<Embedder>>,
}

/// How far ahead of the reading machine's clock a logged time may be before it counts as a
/// wrong clock (clocks a few minutes apart are common).
pub const FUTURE_TOLERANCE_MS: i64 = 10 * 60 * 1000;

/// Everything known about a session so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// Events emitted so far (the next event's sequence number derives from it).
    pub events: u64,
    pub last_ts: i64,
    pub started_at: i64,
    pub updated_at: i64,
    pub title: String,
    pub title_from_harness: bool,
    pub summary: String,
    pub cwd: String,
    pub model: String,
    pub web_search: bool,
    pub self_tools: bool,
    pub other_tools: bool,
    pub turn: TurnState,
    /// The time shown for events before any with a time of its own (a log without
    /// timestamps): never part of an event's key.
    #[serde(default)]
    pub fallback_ts: i64,
    /// The sum of the token vectors of the session's prose (user inputs and assistant
    /// responses) so far (empty before any); `None` when the session was not read with a model
    /// from its start (read without one, or resumed from a checkpoint written without one), so
    /// that no vector of part of it is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prose: Option<Vec<f32>>,
}

/// The session's last (and only open) turn. `ordinal` 0 means no turn yet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnState {
    pub ordinal: u32,
    pub event_count: u32,
    pub started_at: i64,
    pub updated_at: i64,
    pub has_user_input: bool,
    pub user_event: u64,
    pub user_preview: String,
    pub user_truncated: bool,
    /// The latest final-answer-like assistant response: (key, preview, truncated).
    pub last_answer: Option<(u64, String, bool)>,
    /// The latest parent-agent event other than bookkeeping: (key, type), for completing a
    /// turn when the next begins.
    pub last_event: Option<(u64, EventType)>,
    /// That event may end the turn by itself (see [`crate::harness::draft::Draft::may_end_turn`]).
    #[serde(default)]
    pub last_may_end: bool,
    pub completed: bool,
    pub terminal: u64,
    pub final_answer: Option<(u64, String, bool)>,
    pub tools_called: Vec<String>,
    pub event_types: Vec<EventType>,
}

impl TurnState {
    /// Whether the turn has ended, its terminal event and its final answer. Besides an ending
    /// the log records, an answer that may end the turn by itself does so while nothing but
    /// bookkeeping follows it (more of the turn arriving later takes that back).
    fn settled(&self) -> (bool, u64, Option<&(u64, String, bool)>) {
        if self.completed {
            return (true, self.terminal, self.final_answer.as_ref());
        }
        match self.last_event {
            Some((key, EventType::AssistantResponse)) if self.last_may_end => (
                true,
                key,
                self.last_answer.as_ref().filter(|(k, _, _)| *k == key),
            ),
            _ => (false, 0, None),
        }
    }
}

/// Builds one session's rows from its drafts, in file order.
pub struct SessionBuilder {
    pub session_key: u64,
    pub state: SessionState,
    settings: BuildSettings,
    /// Events read whose time was past [`BuildSettings::not_after`].
    pub future_events: u64,
}

impl SessionBuilder {
    pub fn new(session_key: u64, mut state: SessionState, settings: BuildSettings) -> Self {
        match settings.embedder {
            None => state.prose = None,
            Some(_) if state.events == 0 => state.prose = Some(Vec::new()),
            Some(_) => {}
        }
        Self {
            session_key,
            state,
            settings,
            future_events: 0,
        }
    }

    /// Appends one draft: assigns its turn, ordinal and key, and pushes its row (and the row of
    /// a turn it closes) to `events` / `turns`.
    pub fn push(
        &mut self,
        draft: Draft,
        line_no: u32,
        indexer: &mut Indexer,
        events: &mut Vec<EventRow>,
        turns: &mut Vec<TurnRow>,
    ) {
        if draft.names_earlier_result {
            self.name_earlier_result(&draft, events);
        }
        let (key, ts) = self.place(&draft);
        if let Some(closed) = self.enter_turn(&draft, ts) {
            turns.push(closed);
        }
        let summary = event_summary(&draft, self.settings.preview_chars);
        self.record_in_turn(&draft, key, ts, &summary);
        self.record_prose(&draft);
        self.record_in_session(&draft, ts);
        events.push(self.event_row(draft, key, ts, line_no, summary, indexer));
    }

    /// Names the result of `call` that was logged before it, when that result is still among
    /// the rows not yet written (results come at most a few records early).
    fn name_earlier_result(&self, call: &Draft, events: &mut [EventRow]) {
        let result = events.iter_mut().rev().take(EARLY_RESULT_ROWS).find(|e| {
            e.session_key == self.session_key
                && e.event_type == EventType::ToolResponse.code() as i8
                && e.tool_call_id == call.tool_call_id
                && e.tool_name.is_empty()
        });
        if let Some(result) = result {
            result.tool_name = call.tool_name.clone();
            result.self_tool = call.self_tool;
        }
    }

    /// The draft's time (the latest seen, when it has none) and its event key.
    fn place(&mut self, draft: &Draft) -> (u64, i64) {
        let state = &mut self.state;
        if let Some(ts) = draft.ts {
            state.last_ts = state.last_ts.max(ts);
        }
        let ts = draft.ts.unwrap_or(state.last_ts).max(0);
        let sequence = state.events % SEQUENCE_SPAN + 1;
        let key = ((ts as u64 & TIME_MASK) << SEQUENCE_BITS) | sequence;
        state.events += 1;
        let shown = if ts == 0 { state.fallback_ts } else { ts };
        let bound = self.settings.not_after;
        if bound > 0 && shown > bound {
            self.future_events += 1;
            return (key, bound);
        }
        (key, shown)
    }

    /// Starts a new turn when the draft begins one; returns the row of the turn it closes.
    fn enter_turn(&mut self, draft: &Draft, ts: i64) -> Option<TurnRow> {
        let turn = &self.state.turn;
        let starts_turn = draft.starts_turn && !draft.sidechain;
        let opens_turn = draft.opens_turn && !draft.sidechain && turn.completed;
        if !(turn.ordinal == 0 || (starts_turn && turn.has_user_input) || opens_turn) {
            return None;
        }
        let closed = (turn.ordinal > 0).then(|| self.close_turn());
        let ordinal = self.state.turn.ordinal + 1;
        self.state.turn = TurnState {
            ordinal,
            started_at: ts,
            ..TurnState::default()
        };
        closed
    }

    /// What the draft changes in its turn: counts, the user input, the last answer, the ending.
    fn record_in_turn(&mut self, draft: &Draft, key: u64, ts: i64, summary: &(String, bool)) {
        let state = &mut self.state;
        let turn = &mut state.turn;
        turn.event_count += 1;
        turn.updated_at = turn.updated_at.max(ts);
        if turn.started_at == 0 {
            turn.started_at = ts;
        }
        if !turn.event_types.contains(&draft.event_type) {
            turn.event_types.push(draft.event_type);
        }
        if draft.event_type == EventType::ToolCall
            && !draft.tool_name.is_empty()
            && !turn.tools_called.contains(&draft.tool_name)
        {
            turn.tools_called.push(draft.tool_name.clone());
        }
        // The preview of the event's text: the summary already is one, except for tool calls.
        let text_preview = || {
            if draft.event_type == EventType::ToolCall {
                preview(&draft.text, self.settings.preview_chars)
            } else {
                summary.clone()
            }
        };
        if draft.starts_turn && !draft.sidechain && !turn.has_user_input {
            turn.has_user_input = true;
            turn.user_event = key;
            (turn.user_preview, turn.user_truncated) = text_preview();
            if !state.title_from_harness && state.title.is_empty() {
                state.title = title_from_input(&draft.text);
            }
        }
        if draft.sidechain {
            return;
        }
        if !draft.bookkeeping {
            turn.last_event = Some((key, draft.event_type));
            turn.last_may_end = draft.may_end_turn;
        }
        if draft.event_type == EventType::AssistantResponse && !draft.commentary {
            let (text, cut) = text_preview();
            turn.last_answer = Some((key, text, cut));
        }
        if let Some(ending) = draft.ending
            && !turn.completed
        {
            turn.completed = true;
            turn.terminal = key;
            turn.final_answer = match ending {
                Ending::Completed => turn.last_answer.clone(),
                Ending::Interrupted | Ending::Failed => None,
            };
        }
    }

    /// Adds a user input's or assistant response's words to what the session says.
    fn record_prose(&mut self, draft: &Draft) {
        if let (Some(embedder), Some(prose)) = (&self.settings.embedder, &mut self.state.prose)
            && draft.event_type.is_prose()
        {
            let said =
                &draft.text[..floor_char_boundary(&draft.text, self.settings.max_indexed_bytes)];
            embedder.add(said, prose);
        }
    }

    /// What the draft changes in the session: its time span, mode and model.
    fn record_in_session(&mut self, draft: &Draft, ts: i64) {
        let state = &mut self.state;
        if draft.ts.is_some() {
            if state.started_at == 0 || ts < state.started_at {
                state.started_at = ts;
            }
            state.updated_at = state.updated_at.max(ts);
        }
        if draft.web_search {
            state.web_search = true;
        } else if draft.event_type == EventType::ToolCall {
            if draft.self_tool {
                state.self_tools = true;
            } else {
                state.other_tools = true;
            }
        }
        if draft.event_type != EventType::UserInput && !draft.model.is_empty() {
            state.model = draft.model.clone();
        }
    }

    /// The event's row, with its index terms.
    fn event_row(
        &self,
        draft: Draft,
        key: u64,
        ts: i64,
        line_no: u32,
        (summary, summary_truncated): (String, bool),
        indexer: &mut Indexer,
    ) -> EventRow {
        let state = &self.state;
        let originating_model = if draft.event_type == EventType::UserInput {
            String::new()
        } else {
            state.model.clone()
        };
        let searchable = draft.event_type != EventType::Unknown;
        let doc = if searchable {
            let indexed =
                &draft.text[..floor_char_boundary(&draft.text, self.settings.max_indexed_bytes)];
            indexer.index(indexed)
        } else {
            Default::default()
        };
        // Only model output names its model; other events carry the session's model as
        // originating_model (a turn_context, say, names the model without being its output).
        let model = if matches!(
            draft.event_type,
            EventType::AssistantResponse | EventType::Reasoning
        ) {
            draft.model
        } else {
            String::new()
        };
        EventRow {
            session_key: self.session_key,
            turn_ordinal: state.turn.ordinal,
            ordinal: state.turn.event_count,
            event_key: key,
            event_type: draft.event_type.code() as i8,
            ts,
            model,
            originating_model,
            tool_name: draft.tool_name,
            tool_call_id: draft.tool_call_id,
            exit_code: draft.exit_code,
            is_error: draft.is_error,
            raw: crate::rows::strip_text(draft.raw, &draft.text),
            text: draft.text,
            arguments: draft.arguments,
            summary,
            summary_truncated,
            searchable: searchable && !doc.terms.is_empty(),
            self_tool: draft.self_tool,
            doc_len: doc.doc_len,
            line_no,
            terms: doc.terms,
            tfs: doc.tfs,
            batch: 0,
        }
    }

    /// Closes the current turn because a new one begins. A turn whose last parent-agent event
    /// is an assistant response ended with that response: the agent stopped and waited for the
    /// user, which is what a final answer is (Claude Code often logs no stop reason).
    fn close_turn(&mut self) -> TurnRow {
        let turn = &mut self.state.turn;
        if !turn.completed
            && let Some((key, EventType::AssistantResponse)) = turn.last_event
        {
            turn.completed = true;
            turn.terminal = key;
            turn.final_answer = turn.last_answer.clone().filter(|(k, _, _)| *k == key);
        }
        self.turn_row(0)
    }

    /// The open turn's row, if the session has a turn.
    pub fn open_turn_row(&self, version: u64) -> Option<TurnRow> {
        (self.state.turn.ordinal > 0).then(|| self.turn_row(version))
    }

    fn turn_row(&self, version: u64) -> TurnRow {
        let turn = &self.state.turn;
        let (completed, terminal, final_answer) = turn.settled();
        let (final_key, final_preview, final_truncated) =
            final_answer.cloned().unwrap_or((0, String::new(), false));
        TurnRow {
            session_key: self.session_key,
            ordinal: turn.ordinal,
            completed,
            terminal_event_key: terminal,
            event_count: turn.event_count,
            started_at: turn.started_at,
            updated_at: turn.updated_at,
            user_event_key: turn.user_event,
            user_preview: turn.user_preview.clone(),
            user_truncated: turn.user_truncated,
            final_event_key: final_key,
            final_preview,
            final_truncated,
            tools_called: turn.tools_called.clone(),
            event_types: turn
                .event_types
                .iter()
                .map(|t| t.as_str().to_owned())
                .collect(),
            version,
        }
    }

    /// The session row as it stands.
    pub fn session_row(
        &self,
        harness: &str,
        source: &str,
        native_id: &str,
        version: u64,
    ) -> SessionRow {
        let state = &self.state;
        let mode = if state.web_search {
            SessionMode::WebSearch
        } else if state.self_tools {
            SessionMode::McpInternal
        } else if state.other_tools {
            SessionMode::ToolCalling
        } else {
            SessionMode::Chat
        };
        // A log without timestamps shows its fallback time rather than 1970.
        let started_at = match state.started_at {
            0 => state.fallback_ts,
            started => started,
        };
        let title = if state.title.is_empty() {
            format!("{harness} session {native_id}")
        } else {
            state.title.clone()
        };
        SessionRow {
            session_key: self.session_key,
            harness: harness.to_owned(),
            source: source.to_owned(),
            native_id: native_id.to_owned(),
            slug: slugify(&title),
            title,
            summary: state.summary.clone(),
            cwd: state.cwd.clone(),
            model: state.model.clone(),
            started_at,
            updated_at: state.updated_at.max(started_at),
            turn_count: state.turn.ordinal,
            event_count: state.events.min(u32::MAX as u64) as u32,
            completed: state.turn.settled().0,
            mode: mode.as_str().to_owned(),
            version,
            prose_vector: state
                .prose
                .as_deref()
                .and_then(crate::semantic::unit)
                .unwrap_or_default(),
        }
    }

    /// Records the harness's own title for the session.
    pub fn set_harness_title(&mut self, title: &str) {
        let title = title_from_input(title);
        if !title.is_empty() {
            self.state.title = title;
            self.state.title_from_harness = true;
        }
    }
}

/// A title from free text: its first non-empty line, at most [`TITLE_CHARS`] characters.
pub fn title_from_input(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    // The ellipsis of a cut title counts towards the limit.
    match preview(line, TITLE_CHARS) {
        (title, false) => title,
        (_, true) => preview(line, TITLE_CHARS - 1).0,
    }
}

/// A short kebab-case label from a title.
fn slugify(title: &str) -> String {
    let mut slug = String::new();
    for word in title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
    {
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.extend(word.chars().flat_map(char::to_lowercase));
        if slug.chars().count() > 48 {
            break;
        }
    }
    slug.chars().take(48).collect()
}

/// The compact one-line summary shown for an event in `open(turn)`.
fn event_summary(draft: &Draft, max_chars: usize) -> (String, bool) {
    if draft.event_type == EventType::ToolCall
        && let Ok(Value::Object(args)) = serde_json::from_str::<Value>(&draft.arguments)
    {
        for key in [
            "cmd",
            "command",
            "file_path",
            "path",
            "pattern",
            "query",
            "url",
            "prompt",
            "description",
        ] {
            match args.get(key) {
                Some(Value::String(s)) if !s.trim().is_empty() => return preview(s, max_chars),
                Some(Value::Array(items)) if !items.is_empty() => {
                    let words: Vec<String> = items
                        .iter()
                        .map(|v| {
                            v.as_str()
                                .map(str::to_owned)
                                .unwrap_or_else(|| v.to_string())
                        })
                        .collect();
                    return preview(&words.join(" "), max_chars);
                }
                _ => {}
            }
        }
    }
    preview(&draft.text, max_chars)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> BuildSettings {
        BuildSettings {
            preview_chars: 200,
            max_indexed_bytes: 1 << 20,
            not_after: 0,
            embedder: None,
        }
    }

    fn draft(event_type: EventType, ts: i64, text: &str) -> Draft {
        Draft::new(event_type, Some(ts), text.into(), "{}".into())
    }

    fn user(ts: i64, text: &str) -> Draft {
        let mut d = draft(EventType::UserInput, ts, text);
        d.starts_turn = true;
        d
    }

    #[test]
    fn test_preamble_joins_first_turn_and_user_inputs_start_turns() {
        let mut b = SessionBuilder::new(7, SessionState::default(), settings());
        let (mut ev, mut tu, mut ix) = (Vec::new(), Vec::new(), Indexer::default());
        b.push(
            draft(EventType::System, 1000, "environment"),
            1,
            &mut ix,
            &mut ev,
            &mut tu,
        );
        b.push(
            user(2000, "Fix the build\nplease"),
            2,
            &mut ix,
            &mut ev,
            &mut tu,
        );
        b.push(
            draft(EventType::AssistantResponse, 3000, "Fixed."),
            3,
            &mut ix,
            &mut ev,
            &mut tu,
        );
        b.push(user(4000, "thanks"), 4, &mut ix, &mut ev, &mut tu);
        assert_eq!(
            ev.iter()
                .map(|e| (e.turn_ordinal, e.ordinal))
                .collect::<Vec<_>>(),
            [(1, 1), (1, 2), (1, 3), (2, 1)]
        );
        assert_eq!(tu.len(), 1);
        assert!(
            tu[0].completed,
            "the next user input completes a turn ending in an answer"
        );
        assert_eq!(tu[0].terminal_event_key, ev[2].event_key);
        assert_eq!(tu[0].final_event_key, ev[2].event_key);
        assert_eq!(tu[0].user_event_key, ev[1].event_key);
        assert_eq!(
            b.session_row("codex", "codex", "x", 1).title,
            "Fix the build"
        );
        let open = b.open_turn_row(1).unwrap();
        assert!(!open.completed);
        assert_eq!(open.ordinal, 2);
    }

    #[test]
    fn test_turn_markers_after_a_finished_turn_open_the_next() {
        let mut b = SessionBuilder::new(7, SessionState::default(), settings());
        let (mut ev, mut tu, mut ix) = (Vec::new(), Vec::new(), Indexer::default());
        b.push(user(1, "first"), 1, &mut ix, &mut ev, &mut tu);
        let mut done = draft(EventType::Runtime, 2, "task complete");
        done.ending = Some(Ending::Completed);
        b.push(done, 2, &mut ix, &mut ev, &mut tu);
        let mut marker = draft(EventType::System, 3, "turn context");
        marker.opens_turn = true;
        b.push(marker.clone(), 3, &mut ix, &mut ev, &mut tu);
        b.push(marker, 4, &mut ix, &mut ev, &mut tu);
        b.push(user(5, "second"), 5, &mut ix, &mut ev, &mut tu);
        let turns: Vec<_> = ev.iter().map(|e| (e.turn_ordinal, e.ordinal)).collect();
        assert_eq!(turns, [(1, 1), (1, 2), (2, 1), (2, 2), (2, 3)]);
        let open = b.open_turn_row(1).unwrap();
        assert_eq!(open.user_event_key, ev[4].event_key);
        assert_eq!(open.ordinal, 2);
    }

    #[test]
    fn test_an_answer_followed_by_bookkeeping_ends_its_turn_in_logs_without_stop_reasons() {
        let mut b = SessionBuilder::new(7, SessionState::default(), settings());
        let (mut ev, mut tu, mut ix) = (Vec::new(), Vec::new(), Indexer::default());
        let answer = |ts, text| {
            let mut d = draft(EventType::AssistantResponse, ts, text);
            d.may_end_turn = true;
            d
        };
        let bookkeeping = |ts| {
            let mut d = draft(EventType::System, ts, "file history snapshot");
            d.bookkeeping = true;
            d
        };
        b.push(user(1, "first"), 1, &mut ix, &mut ev, &mut tu);
        b.push(answer(2, "one"), 2, &mut ix, &mut ev, &mut tu);
        b.push(bookkeeping(3), 3, &mut ix, &mut ev, &mut tu);
        b.push(user(4, "second"), 4, &mut ix, &mut ev, &mut tu);
        assert!(tu[0].completed);
        assert_eq!(tu[0].terminal_event_key, ev[1].event_key);
        // The last turn: an answer, then bookkeeping, is an ended turn...
        b.push(answer(5, "two"), 5, &mut ix, &mut ev, &mut tu);
        b.push(bookkeeping(6), 6, &mut ix, &mut ev, &mut tu);
        let open = b.open_turn_row(1).unwrap();
        assert!(open.completed);
        assert_eq!(open.terminal_event_key, ev[4].event_key);
        assert_eq!(open.final_event_key, ev[4].event_key);
        assert!(b.session_row("claude-code", "claude", "x", 1).completed);
        // ...until the turn goes on: a tool call after the answer takes that back.
        b.push(
            draft(EventType::ToolCall, 7, "Bash(ls)"),
            7,
            &mut ix,
            &mut ev,
            &mut tu,
        );
        let open = b.open_turn_row(1).unwrap();
        assert!(!open.completed);
        assert_eq!(open.terminal_event_key, 0);
        assert!(!b.session_row("claude-code", "claude", "x", 1).completed);
    }

    #[test]
    fn test_a_result_logged_before_its_call_is_named_by_the_call() {
        use crate::harness::adapter::ToolNames;
        use crate::harness::draft::SelfTools;
        let mut b = SessionBuilder::new(7, SessionState::default(), settings());
        let (mut ev, mut tu, mut ix) = (Vec::new(), Vec::new(), Indexer::default());
        let mut tools = ToolNames::default();
        let self_tools = SelfTools::new(&["moraine".into()]);
        b.push(user(1, "go"), 1, &mut ix, &mut ev, &mut tu);
        let mut result = draft(EventType::ToolResponse, 2, "ok");
        tools.name_result(&mut result, "c1".into());
        assert_eq!(result.tool_name, "");
        b.push(result, 2, &mut ix, &mut ev, &mut tu);
        let mut call = draft(EventType::ToolCall, 3, "search");
        tools.record_call(
            &mut call,
            "mcp__moraine__search_sessions".into(),
            "c1".into(),
            &serde_json::json!({}),
            &self_tools,
        );
        assert!(call.names_earlier_result);
        b.push(call, 3, &mut ix, &mut ev, &mut tu);
        assert_eq!(ev[1].tool_name, "mcp__moraine__search_sessions");
        assert!(ev[1].self_tool);
        // A later call of another id names nothing.
        let mut other = draft(EventType::ToolCall, 4, "ls");
        tools.record_call(
            &mut other,
            "Bash".into(),
            "c2".into(),
            &serde_json::json!({}),
            &self_tools,
        );
        assert!(!other.names_earlier_result);
    }

    #[test]
    fn test_interrupt_completes_without_final_response() {
        let mut b = SessionBuilder::new(7, SessionState::default(), settings());
        let (mut ev, mut tu, mut ix) = (Vec::new(), Vec::new(), Indexer::default());
        b.push(user(1, "go"), 1, &mut ix, &mut ev, &mut tu);
        b.push(
            draft(EventType::AssistantResponse, 2, "working"),
            2,
            &mut ix,
            &mut ev,
            &mut tu,
        );
        let mut stop = draft(EventType::Runtime, 3, "interrupted");
        stop.ending = Some(Ending::Interrupted);
        b.push(stop, 3, &mut ix, &mut ev, &mut tu);
        let row = b.open_turn_row(1).unwrap();
        assert!(row.completed);
        assert_eq!(row.terminal_event_key, ev[2].event_key);
        assert_eq!(row.final_event_key, 0);
    }

    #[test]
    fn test_keys_are_unique_and_time_ordered() {
        let mut b = SessionBuilder::new(7, SessionState::default(), settings());
        let (mut ev, mut tu, mut ix) = (Vec::new(), Vec::new(), Indexer::default());
        for i in 0..5 {
            b.push(
                draft(EventType::System, 1000, &format!("e{i}")),
                i,
                &mut ix,
                &mut ev,
                &mut tu,
            );
        }
        b.push(
            draft(EventType::System, 999, "earlier"),
            9,
            &mut ix,
            &mut ev,
            &mut tu,
        );
        let keys: std::collections::HashSet<u64> = ev.iter().map(|e| e.event_key).collect();
        assert_eq!(keys.len(), 6);
        assert!(ev[5].event_key >> SEQUENCE_BITS < ev[0].event_key >> SEQUENCE_BITS);
    }

    #[test]
    fn test_state_round_trips_through_json() {
        let mut b = SessionBuilder::new(7, SessionState::default(), settings());
        let (mut ev, mut tu, mut ix) = (Vec::new(), Vec::new(), Indexer::default());
        b.push(user(1, "go"), 1, &mut ix, &mut ev, &mut tu);
        let json = serde_json::to_string(&b.state).unwrap();
        let back: SessionState = serde_json::from_str(&json).unwrap();
        assert_eq!(back, b.state);
    }

    #[test]
    fn test_titles_and_slugs() {
        assert_eq!(
            title_from_input("\n  Fix ClickHouse schema migration failure  \nmore"),
            "Fix ClickHouse schema migration failure"
        );
        assert_eq!(
            title_from_input(&"x".repeat(300)).chars().count(),
            TITLE_CHARS
        );
        assert_eq!(
            slugify("Fix ClickHouse schema: migration failure!"),
            "fix-clickhouse-schema-migration-failure"
        );
    }
}
