//! OpenClaw sessions (formerly Clawdbot and Moltbot, on Pi's session format): the JSON Lines
//! transcripts `<state>/agents/<agent>/sessions/<session>.jsonl`, read as they are appended, and
//! since 2026.8 the SQLite store `<state>/agents/<agent>/agent/openclaw-agent.sqlite`, whose
//! `transcript_events` rows are those same lines, rendered one session at a time.
//!
//! A transcript opens with a `session` header (id, cwd); every other line is an entry with a
//! short id and the id of its parent: messages (user, assistant content blocks, tool results,
//! shell commands the user ran), compactions, branch summaries, model and thinking-level changes,
//! labels, the session's name, and extension records (`custom`, kept out of the model's context;
//! `custom_message`, put into it). A turn starts at a user message; it ends at an assistant
//! message whose stop reason is not a request for tools (`stop`, `length`: completed; `aborted`:
//! interrupted; `error`: failed). OpenClaw's own transcript-only assistant rows (provider
//! `openclaw`, a mirror of a delivered message or text the gateway injected) are not answers.
//!
//! A session present both in a store and as a leftover transcript (the migration to the store
//! leaves the JSONL behind) is read once, from the store.

use super::identity::{Identity, dir_name, id_text, is_uuid, stem};
use super::{DefaultSource, LogFormat, ReadContext};
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::adapter::{AdapterOutput, ToolNames};
use super::draft::{Draft, Ending, SelfTools, parse_ts};
use super::rendered::{Rendering, invalid};
use super::store::{self, Store};
use crate::vocab::EventType;

/// The store's file name.
const STORE_NAME: &str = "openclaw-agent.sqlite";

/// The sessions of a store with the size of their transcripts (no row is read whole).
pub(crate) fn sessions(path: &Path) -> io::Result<Vec<(String, u64)>> {
    let found = Store::open(path)?.snapshot(|db| {
        if !store::has_table(db, "transcript_events")? {
            return Ok(None);
        }
        let mut query = db.prepare(
            "SELECT session_id, sum(octet_length(event_json)) + count(*) FROM transcript_events \
             GROUP BY session_id ORDER BY min(created_at), session_id",
        )?;
        let rows = query.query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, Option<i64>>(1)?))
        })?;
        let mut sessions = Vec::new();
        for row in rows {
            let (id, size) = row?;
            sessions.push((id, u64::try_from(size.unwrap_or(0)).unwrap_or(0)));
        }
        Ok(Some(sessions))
    })?;
    found.ok_or_else(|| invalid("not an OpenClaw agent store (no transcript_events table)"))
}

/// Renders one session of a store (`openclaw-agent.sqlite#<session>`): a header from its
/// `session_windows` row (with the transcript's own `session` header, when its first event is
/// one, folded in), then its other transcript events in order, each line as it is stored.
///
/// Past the header, the rendering of a session moved into the store is its transcript's lines,
/// byte for byte: wherever the transcript was stored before (a pushed copy), the store's
/// session reads as a copy of it and takes it over. Like a transcript, it is read on when rows
/// were added, and read again when its first or last lines changed.
pub(crate) fn render(path: &Path) -> io::Result<Vec<u8>> {
    let (store_path, session) =
        super::store_session(path).ok_or_else(|| invalid("not an OpenClaw store session"))?;
    let session = session.to_owned();
    Store::open(&store_path)?.snapshot(move |db| {
        let mut header = window(db, &session)?;
        let mut query = db.prepare(
            "SELECT CAST(event_json AS TEXT) FROM transcript_events WHERE session_id = ?1 ORDER BY seq",
        )?;
        let mut events: Vec<String> = query
            .query_map([&session], |row| row.get::<_, Option<String>>(0))?
            .map(|text| text.map(Option::unwrap_or_default))
            .collect::<rusqlite::Result<_>>()?;
        if let Some(first) = events.first()
            && let Ok(Value::Object(first)) = serde_json::from_str::<Value>(first)
            && first.get("type").and_then(Value::as_str) == Some("session")
        {
            header.insert("session".into(), Value::Object(first));
            events.remove(0);
        }
        let mut out = Rendering::default();
        out.push("window", header);
        for event in &events {
            // Not JSON (OpenClaw's own reader skips such a row): counted as malformed.
            out.push_line(event.as_bytes());
        }
        Ok(out.into_bytes())
    })
}

/// The session's header: its id, and what its window row says that does not change as the
/// session goes on (its name, when it began).
fn window(db: &rusqlite::Connection, session: &str) -> rusqlite::Result<Map<String, Value>> {
    let mut header = Map::new();
    header.insert("sessionId".into(), Value::String(session.to_owned()));
    if !store::has_table(db, "session_windows")? {
        return Ok(header);
    }
    let columns = store::columns(db, "session_windows")?;
    let wanted: Vec<&str> = ["display_name", "started_at", "created_at"]
        .into_iter()
        .filter(|c| columns.iter().any(|have| have == c))
        .collect();
    if wanted.is_empty() {
        return Ok(header);
    }
    // Column names come from the list above, never from input.
    let sql = format!(
        "SELECT {} FROM session_windows WHERE session_id = ?1",
        wanted.join(", ")
    );
    let mut query = db.prepare(&sql)?;
    let mut rows = query.query([session])?;
    if let Some(row) = rows.next()? {
        for (i, column) in wanted.iter().enumerate() {
            let value = match row.get::<_, rusqlite::types::Value>(i)? {
                rusqlite::types::Value::Text(text) => Value::String(text),
                rusqlite::types::Value::Integer(n) => Value::from(n),
                _ => continue,
            };
            header.insert((*column).to_owned(), value);
        }
    }
    Ok(header)
}

/// Adapter state carried across runs in the checkpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct OpenClawState {
    tools: ToolNames,
    /// The model last named (a model change, an assistant message).
    model: String,
}

pub(crate) struct OpenClaw<'a> {
    pub state: &'a mut OpenClawState,
    pub self_tools: &'a SelfTools,
}

impl OpenClaw<'_> {
    /// Normalises one transcript line, or one line of a store's rendered session.
    pub(crate) fn read(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        match record.get("record").and_then(Value::as_str) {
            Some("window") => window_header(record, out),
            None => self.entry(record, raw, out),
            Some(_) => out.drafts.push(Draft::new(
                EventType::Unknown,
                None,
                String::new(),
                raw.to_owned(),
            )),
        }
    }

    fn entry(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        let ts = parse_ts(record.get("timestamp"));
        let text = |key: &str| {
            record
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let raw = raw.to_owned();
        let draft = match record.get("type").and_then(Value::as_str).unwrap_or("") {
            "session" => {
                if let Some(cwd) = record.get("cwd").and_then(Value::as_str) {
                    out.cwd = Some(cwd.to_owned());
                }
                return;
            }
            "message" => return self.message(record, ts, raw, out),
            "compaction" => Draft::new(EventType::Compaction, ts, text("summary"), raw),
            // The summary of a branch left behind, put into the context of the one taken.
            "branch_summary" => Draft::new(EventType::Compaction, ts, text("summary"), raw),
            "custom" => {
                let kind = text("customType");
                let data = record.get("data").filter(|d| !d.is_null());
                if kind == "model-snapshot"
                    && let Some(model) = data.and_then(|d| d.get("modelId")).and_then(Value::as_str)
                {
                    self.state.model = model.to_owned();
                }
                let body = data.map_or(kind.clone(), |d| format!("{kind}: {d}"));
                Draft::bookkeeping(ts, body, raw)
            }
            // Context an extension (OpenClaw's runtime among them) put before the model: the
            // harness talking, not a prompt.
            "custom_message" => {
                let body = record.get("content").map(blocks_text).unwrap_or_default();
                let body = if body.trim().is_empty() {
                    text("customType")
                } else {
                    body
                };
                Draft::bookkeeping(ts, body, raw)
            }
            "model_change" => {
                let model = text("modelId");
                let provider = text("provider");
                if !model.is_empty() {
                    self.state.model.clone_from(&model);
                }
                let name = if provider.is_empty() {
                    model
                } else {
                    format!("{provider}/{model}")
                };
                Draft::bookkeeping(ts, format!("model: {name}"), raw)
            }
            "thinking_level_change" => Draft::bookkeeping(
                ts,
                format!("thinking level: {}", text("thinkingLevel")),
                raw,
            ),
            "label" => {
                let label = text("label");
                let body = if label.is_empty() {
                    "label cleared".to_owned()
                } else {
                    format!("label: {label}")
                };
                Draft::bookkeeping(ts, body, raw)
            }
            "session_info" => {
                let name = text("name");
                if !name.trim().is_empty() {
                    out.title = Some(name);
                }
                return;
            }
            _ => Draft::new(EventType::Unknown, ts, String::new(), raw),
        };
        out.drafts.push(draft);
    }

    fn message(&mut self, record: &Value, ts: Option<i64>, raw: String, out: &mut AdapterOutput) {
        let message = record.get("message").unwrap_or(&Value::Null);
        // The entry's time, else the message's own (ms).
        let ts = ts.or_else(|| message.get("timestamp").and_then(Value::as_i64));
        let content = message.get("content").unwrap_or(&Value::Null);
        let field = |key: &str| {
            message
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let draft = match message.get("role").and_then(Value::as_str).unwrap_or("") {
            "user" => {
                let text = blocks_text(content);
                if text.trim().is_empty() {
                    return;
                }
                let mut draft = Draft::new(EventType::UserInput, ts, text, raw);
                draft.starts_turn = true;
                draft
            }
            "assistant" => return self.assistant(message, ts, raw, out),
            "toolResult" => {
                let id = field("toolCallId");
                let mut draft = self.state.tools.result(ts, &id, blocks_text(content), raw);
                if draft.tool_name.is_empty() {
                    draft.tool_name = field("toolName");
                }
                draft.is_error = message.get("isError").and_then(Value::as_bool) == Some(true);
                draft.exit_code = message
                    .pointer("/details/exitCode")
                    .and_then(Value::as_i64)
                    .and_then(|c| i32::try_from(c).ok());
                draft
            }
            // A command the user ran in the session (`!cmd`): its output went into the context.
            "bashExecution" => {
                let id = format!(
                    "bash-{}",
                    record.get("id").and_then(Value::as_str).unwrap_or("")
                );
                let arguments = json!({"command": field("command")});
                let mut call = self.state.tools.call(
                    ts,
                    "bash",
                    &id,
                    &arguments,
                    raw.clone(),
                    self.self_tools,
                );
                call.text = field("command");
                let mut result = self.state.tools.result(ts, &id, field("output"), raw);
                result.exit_code = message
                    .get("exitCode")
                    .and_then(Value::as_i64)
                    .and_then(|c| i32::try_from(c).ok());
                let cancelled = message.get("cancelled").and_then(Value::as_bool) == Some(true);
                result.is_error = cancelled || result.exit_code.is_some_and(|c| c != 0);
                out.drafts.extend([call, result]);
                return;
            }
            "compactionSummary" | "branchSummary" => {
                let summary = message
                    .get("summary")
                    .and_then(Value::as_str)
                    .map_or_else(|| blocks_text(content), str::to_owned);
                Draft::new(EventType::Compaction, ts, summary, raw)
            }
            // Extension messages (`custom`, `hookMessage` before v3) and roles this reader does
            // not know: put into the context by the harness.
            other => {
                let body = blocks_text(content);
                let body = if body.trim().is_empty() {
                    ["customType", "role"]
                        .iter()
                        .find_map(|k| message.get(*k).and_then(Value::as_str))
                        .unwrap_or(other)
                        .to_owned()
                } else {
                    body
                };
                Draft::bookkeeping(ts, body, raw)
            }
        };
        out.drafts.push(draft);
    }

    fn assistant(
        &mut self,
        message: &Value,
        ts: Option<i64>,
        raw: String,
        out: &mut AdapterOutput,
    ) {
        let field = |key: &str| message.get(key).and_then(Value::as_str).unwrap_or("");
        let content = message.get("content").unwrap_or(&Value::Null);
        if is_transcript_only(field("provider"), field("model")) {
            // A delivered message mirrored into the transcript, or text the gateway injected.
            out.drafts
                .push(Draft::bookkeeping(ts, blocks_text(content), raw));
            return;
        }
        if !field("model").is_empty() {
            self.state.model = field("model").to_owned();
        }
        let blocks: Vec<Value> = match content {
            Value::String(text) => vec![json!({"type": "text", "text": text})],
            Value::Array(blocks) => blocks.clone(),
            _ => Vec::new(),
        };
        let calls = blocks
            .iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"));
        let stop = field("stopReason");
        let mut drafts = Vec::new();
        for block in &blocks {
            let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
            let raw = block.to_string();
            let mut draft = match block.get("type").and_then(Value::as_str).unwrap_or("") {
                "text" => {
                    if text("text").trim().is_empty() {
                        continue;
                    }
                    let mut draft = Draft::new(
                        EventType::AssistantResponse,
                        ts,
                        text("text").to_owned(),
                        raw,
                    );
                    draft.commentary = calls;
                    // A log without stop reasons (none seen yet): an answer ends its turn.
                    draft.may_end_turn = stop.is_empty() && !calls;
                    draft
                }
                "thinking" => {
                    if text("thinking").trim().is_empty() {
                        continue;
                    }
                    Draft::new(EventType::Reasoning, ts, text("thinking").to_owned(), raw)
                }
                "toolCall" => {
                    let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
                    let id = text("id");
                    let arguments = block.get("arguments").unwrap_or(&Value::Null);
                    self.state
                        .tools
                        .call(ts, name, id, arguments, raw, self.self_tools)
                }
                // Images the model produced: nothing to index.
                "image" => continue,
                _ => Draft::new(EventType::Unknown, ts, String::new(), raw),
            };
            draft.model.clone_from(&self.state.model);
            drafts.push(draft);
        }
        let error = field("errorMessage");
        match stop {
            "stop" | "length" => {
                let last = drafts
                    .iter()
                    .rposition(|d| d.event_type == EventType::AssistantResponse)
                    .or_else(|| drafts.len().checked_sub(1));
                match last {
                    Some(at) => drafts[at].ending = Some(Ending::Completed),
                    None => {
                        let mut end =
                            Draft::new(EventType::Runtime, ts, format!("stop: {stop}"), raw);
                        end.ending = Some(Ending::Completed);
                        drafts.push(end);
                    }
                }
            }
            "aborted" => {
                let text = if error.is_empty() { "aborted" } else { error };
                let mut end = Draft::new(EventType::Runtime, ts, text.to_owned(), raw);
                end.ending = Some(Ending::Interrupted);
                drafts.push(end);
            }
            "error" => {
                let text = if error.is_empty() { "error" } else { error };
                let mut end = Draft::new(EventType::Runtime, ts, text.to_owned(), raw);
                end.is_error = true;
                end.ending = Some(Ending::Failed);
                drafts.push(end);
            }
            _ => {}
        }
        out.drafts.extend(drafts);
    }
}

/// A store's session header: its name, when it began, and its transcript's header.
fn window_header(record: &Value, out: &mut AdapterOutput) {
    if let Some(cwd) = record.pointer("/session/cwd").and_then(Value::as_str) {
        out.cwd = Some(cwd.to_owned());
    }
    if let Some(name) = record
        .get("display_name")
        .and_then(Value::as_str)
        .filter(|n| !n.trim().is_empty())
    {
        out.title = Some(name.to_owned());
    }
    out.started_at = ["started_at", "created_at"]
        .iter()
        .find_map(|k| record.get(*k).and_then(Value::as_i64))
        .filter(|t| *t > 0);
}

/// OpenClaw's own assistant rows that no model wrote (`src/shared/transcript-only-openclaw-
/// assistant.ts`): a message delivered through a channel mirrored into the transcript, and text
/// the gateway injected.
fn is_transcript_only(provider: &str, model: &str) -> bool {
    provider == "openclaw" && matches!(model, "delivery-mirror" | "gateway-injected")
}

/// The text of a content field: a string, or the `text` of its blocks (an image block stands as
/// `[image]`).
fn blocks_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => {
            let parts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                    Some("image") => Some("[image]"),
                    _ => b.get("text").and_then(Value::as_str),
                })
                .collect();
            parts.join("\n")
        }
        _ => String::new(),
    }
}

/// An entry id: 8 hex digits, or a whole UUID where those collided.
fn is_entry_id(id: &str) -> bool {
    id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit()) || is_uuid(id)
}

/// A session id as OpenClaw names transcripts by it (`SAFE_SESSION_ID_RE`).
fn is_session_id(id: &str) -> bool {
    let mut bytes = id.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphanumeric())
        && id.len() <= 128
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A pre-compaction copy: `<session>.checkpoint.<uuid>.jsonl`.
fn is_checkpoint_copy(name: &str) -> bool {
    name.strip_suffix(".jsonl")
        .and_then(|rest| rest.rsplit_once(".checkpoint."))
        .is_some_and(|(_, id)| is_uuid(id))
}

// ---- The harness's log format -------------------------------------------------------------

/// Where OpenClaw keeps its logs and how they are recognised and named.
pub(crate) struct Format;

/// Reads one record of an OpenClaw log.
pub(crate) fn read(
    state: &mut OpenClawState,
    cx: &ReadContext<'_>,
    record: &Value,
    raw: &str,
    out: &mut AdapterOutput,
) {
    OpenClaw {
        state,
        self_tools: cx.self_tools,
    }
    .read(record, raw, out);
}

impl LogFormat for Format {
    /// The state directory, `~/.openclaw`, or the first of the older names that exists.
    fn default_sources(&self) -> &'static [DefaultSource] {
        const fn source(glob: &'static str) -> DefaultSource {
            DefaultSource {
                name: "openclaw",
                glob,
            }
        }
        const SOURCES: &[DefaultSource] = &[
            source("~/.openclaw/agents/*/sessions/*.jsonl"),
            source("~/.openclaw/agents/*/agent/openclaw-agent.sqlite"),
            source("~/.clawdbot/agents/*/sessions/*.jsonl"),
            source("~/.clawdbot/agents/*/agent/openclaw-agent.sqlite"),
            source("~/.moltbot/agents/*/sessions/*.jsonl"),
            source("~/.moltbot/agents/*/agent/openclaw-agent.sqlite"),
            source("~/.moldbot/agents/*/sessions/*.jsonl"),
            source("~/.moldbot/agents/*/agent/openclaw-agent.sqlite"),
        ];
        SOURCES
    }

    fn path_hints(&self) -> &'static [&'static str] {
        &["/.openclaw/", "/.clawdbot/", "/.moltbot/", "/.moldbot/"]
    }

    fn scan_names(&self) -> &'static [&'static str] {
        &["*.jsonl", STORE_NAME]
    }

    /// The store and the transcripts; not the archives (`.reset.`, `.deleted.`, `.bak.`, with
    /// or without `.zst`), pre-compaction copies, runtime trajectories, set-aside damaged files
    /// or the index.
    fn is_log_name(&self, path: &Path) -> bool {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == STORE_NAME {
            return true;
        }
        name.ends_with(".jsonl")
            && !name.ends_with(".trajectory.jsonl")
            && !is_checkpoint_copy(name)
            && ![".corrupt-", ".reset.", ".deleted.", ".bak."]
                .iter()
                .any(|marker| name.contains(marker))
    }

    /// The `session` header (an id, and a version or a working directory), or an entry of a
    /// kind only this format has: a short entry id with its parent's, and camelCase tool calls
    /// and results, or OpenClaw's own record kinds.
    fn detect_record(&self, record: &Map<String, Value>) -> bool {
        let has = |key: &str| record.contains_key(key);
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        let id = record.get("id").and_then(Value::as_str);
        if kind == "session" {
            return id.is_some() && (has("version") || has("cwd"));
        }
        if !(id.is_some_and(is_entry_id) && has("parentId")) {
            return false;
        }
        match kind {
            "message" => {
                let message = record.get("message");
                let role = message
                    .and_then(|m| m.get("role"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let calls = message
                    .and_then(|m| m.get("content"))
                    .and_then(Value::as_array)
                    .is_some_and(|blocks| {
                        blocks
                            .iter()
                            .any(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
                    });
                calls
                    || matches!(
                        role,
                        "toolResult" | "bashExecution" | "compactionSummary" | "branchSummary"
                    )
            }
            "model_change" => has("modelId"),
            "thinking_level_change" => has("thinkingLevel"),
            "compaction" => has("firstKeptEntryId"),
            "branch_summary" => has("fromId"),
            "custom" | "custom_message" => has("customType"),
            "label" => has("targetId"),
            "session_info" => true,
            _ => false,
        }
    }

    /// `sessions/<session>.jsonl`: transcripts are named by their session.
    fn identity_from_name(&self, path: &Path) -> Option<Identity> {
        let stem = stem(path)?;
        (dir_name(path, 1)? == "sessions" && is_session_id(stem)).then(|| Identity::main(stem))
    }

    /// The `session` header of a transcript under any other name.
    fn identity_from_record(&self, record: &Map<String, Value>) -> Option<Identity> {
        (record.get("type").and_then(Value::as_str) == Some("session"))
            .then(|| id_text(record.get("id")))
            .flatten()
            .map(|id| Identity::main(&id))
    }

    fn is_store(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "sqlite")
    }

    /// A session of a store; the transcripts are read as they are.
    fn is_rendered(&self, path: &Path) -> bool {
        super::store_session(path).is_some()
    }

    fn render(&self, path: &Path) -> io::Result<Vec<u8>> {
        render(path)
    }

    fn store_sessions(&self, path: &Path) -> io::Result<Vec<(String, u64)>> {
        sessions(path)
    }

    /// A transcript the store's migration left behind.
    fn superseded(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "jsonl")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(lines: &[Value]) -> (Vec<Draft>, AdapterOutput) {
        let self_tools = SelfTools::new(&["moraine".into()]);
        let mut state = OpenClawState::default();
        let mut all = Vec::new();
        let mut out = AdapterOutput::default();
        for line in lines {
            OpenClaw {
                state: &mut state,
                self_tools: &self_tools,
            }
            .read(line, &line.to_string(), &mut out);
            all.append(&mut out.drafts);
        }
        (all, out)
    }

    #[test]
    fn test_stop_reasons_end_turns_and_transcript_only_rows_are_not_answers() {
        let assistant = |stop: &str, provider: &str, model: &str| {
            json!({"type":"message","id":"0a1b2c3d","parentId":null,"timestamp":"2026-05-01T10:00:00Z",
                   "message":{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":provider,"model":model,"stopReason":stop,"timestamp":1}})
        };
        let (drafts, _) = read_all(&[assistant("stop", "anthropic", "claude-x")]);
        assert_eq!(drafts[0].ending, Some(Ending::Completed));
        assert_eq!(drafts[0].model, "claude-x");
        let (drafts, _) = read_all(&[assistant("aborted", "anthropic", "claude-x")]);
        assert_eq!(
            drafts.iter().map(|d| d.event_type).collect::<Vec<_>>(),
            [EventType::AssistantResponse, EventType::Runtime]
        );
        assert_eq!(drafts[1].ending, Some(Ending::Interrupted));
        let (drafts, _) = read_all(&[assistant("error", "anthropic", "claude-x")]);
        assert_eq!(drafts[1].ending, Some(Ending::Failed));
        assert!(drafts[1].is_error);
        let (drafts, _) = read_all(&[assistant("stop", "openclaw", "delivery-mirror")]);
        assert_eq!(drafts.len(), 1);
        assert!(drafts[0].bookkeeping);
        assert_eq!(drafts[0].event_type, EventType::System);
        assert_eq!(drafts[0].ending, None);
    }

    #[test]
    fn test_results_are_named_after_their_calls_and_keep_the_exit_code() {
        let (drafts, _) = read_all(&[
            json!({"type":"message","id":"0a1b2c3d","parentId":null,"timestamp":"2026-05-01T10:00:00Z",
                   "message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"moraine__search_sessions","arguments":{"query":"x"}}],"stopReason":"toolUse"}}),
            json!({"type":"message","id":"1b2c3d4e","parentId":"0a1b2c3d","timestamp":"2026-05-01T10:00:01Z",
                   "message":{"role":"toolResult","toolCallId":"call_1","toolName":"ignored","content":[{"type":"text","text":"found"}],"details":{"exitCode":3},"isError":true}}),
        ]);
        assert_eq!(drafts[0].event_type, EventType::ToolCall);
        assert!(drafts[0].self_tool);
        assert_eq!(drafts[1].tool_name, "moraine__search_sessions");
        assert!(drafts[1].self_tool);
        assert_eq!((drafts[1].exit_code, drafts[1].is_error), (Some(3), true));
    }

    #[test]
    fn test_names_and_sidecars() {
        let format = Format;
        let log =
            |name: &str| format.is_log_name(Path::new(&format!("/s/agents/main/sessions/{name}")));
        let id = "0199f0c2-7b1c-7d3e-9f00-1a2b3c4d5e6f";
        assert!(log(&format!("{id}.jsonl")));
        assert!(log(&format!("{id}-topic-42.jsonl")));
        assert!(log("boot-2026-06-12_01-38-43-539-a2a5aeed.jsonl"));
        assert!(format.is_log_name(Path::new("/s/agents/main/agent/openclaw-agent.sqlite")));
        for sidecar in [
            format!("{id}.jsonl.reset.2026-06-01T10-00-00.000Z"),
            format!("{id}.jsonl.deleted.2026-06-01T10-00-00.000Z"),
            format!("{id}.jsonl.bak.2026-06-01T10-00-00Z"),
            format!("{id}.jsonl.reset.2026-06-01T10-00-00.000Z.zst"),
            format!("{id}.checkpoint.{id}.jsonl"),
            format!("{id}.trajectory.jsonl"),
            format!("{id}.corrupt-2026-06-01T10-00-00-1a2b3c4d.jsonl"),
            "sessions.json".to_owned(),
            "incognito-openclaw-agent.sqlite".to_owned(),
        ] {
            assert!(!log(&sidecar), "{sidecar}");
        }
        assert_eq!(
            format.identity_from_name(Path::new(&format!("/s/agents/main/sessions/{id}.jsonl"))),
            Some(Identity::main(id))
        );
        assert_eq!(
            format.identity_from_name(Path::new("/tmp/export.jsonl")),
            None
        );
    }
}
