//! Continue sessions (`~/.continue/sessions/<session>.json`, written by the VS Code and
//! JetBrains extensions and the `cn` CLI) rendered one history item per line and normalised into
//! draft events.
//!
//! A session is one JSON document (`sessionId`, `title`, `workspaceDirectory`, `history`, `mode`,
//! `chatModelTitle`), rewritten whole on every save. It is rendered as a header, then one line
//! per history item (its message, the context items it came with, the model that answered, its
//! reasoning and any conversation summary), a tool's result from `toolCallStates` on a line of
//! its own after its call when no `tool` message carries it. What changes while a reply streams
//! or a tool runs (usage, the prompt logs but for the model they name, the tool's state) is left
//! out of the lines, so a session that only grew renders as its old lines and new ones, and is
//! read on from its checkpoint.
//!
//! Messages carry no times. The session's start is `dateCreated` in the index `sessions.json`
//! beside it (else the file's time); reasoning carries its own. A turn starts at a user message;
//! with no stop reasons, it ends with an answer that asked for no tools and that nothing but
//! bookkeeping follows, or at a tool call the user cancelled. Files of the 2023 Python extension
//! (a history of steps, no messages) are not read.

use super::identity::{Identity, dir_name, id_text, is_uuid, stem};
use super::{DefaultSource, LogFormat, ReadContext};
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::adapter::{AdapterOutput, ToolNames};
use super::draft::{Draft, Ending, SelfTools};
use super::rendered::{self, Rendering, invalid};
use crate::vocab::EventType;

/// The index of a sessions directory.
const INDEX_NAME: &str = "sessions.json";

/// The title of a session Continue has not named yet.
const UNNAMED: &str = "New Session";

/// Tool statuses after which a tool has its result.
const FINISHED: &[&str] = &["done", "errored", "canceled"];

/// Renders the session file at `path`.
pub(crate) fn render(path: &Path) -> io::Result<Vec<u8>> {
    if path.file_name().is_some_and(|n| n == INDEX_NAME) {
        return Err(invalid(
            "Continue's index of sessions, not a session (each session is a file beside it)",
        ));
    }
    let bytes = rendered::read_source(path)?;
    let document: Value = serde_json::from_slice(rendered::json_document(&bytes))
        .map_err(|e| invalid(format!("not valid JSON: {e}")))?;
    let created = document
        .get("sessionId")
        .and_then(Value::as_str)
        .and_then(|id| date_created(&path.with_file_name(INDEX_NAME), id));
    render_document(&document, created)
}

/// Renders a session document; `created` is its `dateCreated` from the index.
pub(crate) fn render_document(document: &Value, created: Option<i64>) -> io::Result<Vec<u8>> {
    let Value::Object(fields) = document else {
        return Err(invalid("not a Continue session (not a JSON object)"));
    };
    let history = fields.get("history");
    let items = history.and_then(Value::as_array);
    let stepped = items.is_none_or(|items| {
        items
            .iter()
            .any(|item| !item.get("message").is_some_and(Value::is_object))
    });
    if fields.contains_key("session_info") || history.is_some() && stepped {
        return Err(invalid(
            "a session of Continue's 2023 Python extension (a history of steps, no messages): not read",
        ));
    }
    let Some(id) = fields.get("sessionId").and_then(Value::as_str) else {
        return Err(invalid("not a Continue session (no sessionId)"));
    };
    let mut header = Map::new();
    header.insert("sessionId".into(), Value::String(id.to_owned()));
    for key in ["title", "mode", "chatModelTitle"] {
        if let Some(value) = fields.get(key).filter(|v| v.is_string()) {
            header.insert(key.into(), value.clone());
        }
    }
    if let Some(directory) = fields.get("workspaceDirectory").and_then(Value::as_str) {
        header.insert("cwd".into(), Value::String(workspace_path(directory)));
    }
    if let Some(created) = created {
        header.insert("dateCreated".into(), Value::from(created));
    }
    let mut out = Rendering::default();
    out.push("session", header);
    let items = items.map_or(&[][..], Vec::as_slice);
    // Calls whose result a `tool` message carries, and how each finished call ended.
    let mut answered: HashSet<&str> = HashSet::new();
    let mut statuses: HashMap<&str, &str> = HashMap::new();
    for item in items {
        let message = &item["message"];
        if message.get("role").and_then(Value::as_str) == Some("tool")
            && let Some(call) = message.get("toolCallId").and_then(Value::as_str)
        {
            answered.insert(call);
        }
        for state in tool_states(item) {
            if let (Some(call), Some(status)) = (
                state.get("toolCallId").and_then(Value::as_str),
                state.get("status").and_then(Value::as_str),
            ) && FINISHED.contains(&status)
            {
                statuses.insert(call, status);
            }
        }
    }
    for item in items {
        out.push("item", item_line(item, &statuses));
        for state in tool_states(item) {
            let call = state
                .get("toolCallId")
                .and_then(Value::as_str)
                .unwrap_or("");
            let status = state.get("status").and_then(Value::as_str).unwrap_or("");
            if call.is_empty() || !FINISHED.contains(&status) || answered.contains(call) {
                continue;
            }
            let output: Vec<&str> = state
                .get("output")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("content").and_then(Value::as_str))
                .collect();
            let mut result = Map::new();
            result.insert("toolCallId".into(), Value::String(call.to_owned()));
            result.insert("status".into(), Value::String(status.to_owned()));
            result.insert("output".into(), Value::String(output.join("\n")));
            out.push("tool_result", result);
        }
    }
    Ok(out.into_bytes())
}

/// A history item's tool states: `toolCallStates`, or the single `toolCallState` of older
/// builds.
fn tool_states(item: &Value) -> impl Iterator<Item = &Value> {
    let many = item
        .get("toolCallStates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    let one = item.get("toolCallState").filter(|s| s.is_object());
    many.chain(one)
}

/// The line of one history item: what it says, without what changes while it streams.
fn item_line(item: &Value, statuses: &HashMap<&str, &str>) -> Map<String, Value> {
    let mut line = Map::new();
    let mut message = Map::new();
    let source = item["message"].as_object().cloned().unwrap_or_default();
    for key in ["id", "role", "content", "toolCallId"] {
        if let Some(value) = source.get(key).filter(|v| !v.is_null()) {
            message.insert(key.into(), value.clone());
        }
    }
    if let Some(Value::Array(calls)) = source.get("toolCalls") {
        let calls: Vec<Value> = calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.get("id"),
                    "name": call.pointer("/function/name"),
                    "arguments": call.pointer("/function/arguments"),
                })
            })
            .collect();
        message.insert("toolCalls".into(), Value::Array(calls));
    }
    if let Some(status) = source
        .get("toolCallId")
        .and_then(Value::as_str)
        .and_then(|call| statuses.get(call))
    {
        message.insert("status".into(), Value::String((*status).to_owned()));
    }
    line.insert("message".into(), Value::Object(message));
    let context: Vec<Value> = item
        .get("contextItems")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| json!({"name": c.get("name"), "description": c.get("description"), "content": c.get("content")}))
        .collect();
    if !context.is_empty() {
        line.insert("contextItems".into(), Value::Array(context));
    }
    // The model that answered, as the prompt log names it.
    if let Some(model) = item
        .get("promptLogs")
        .and_then(Value::as_array)
        .and_then(|logs| logs.last())
        .and_then(|log| {
            log.pointer("/completionOptions/model")
                .or_else(|| log.get("modelTitle"))
        })
        .and_then(Value::as_str)
    {
        line.insert("model".into(), Value::String(model.to_owned()));
    }
    if let Some(reasoning) = item.get("reasoning").filter(|r| r.is_object()) {
        let mut kept = Map::new();
        for key in ["text", "startAt", "endAt"] {
            if let Some(value) = reasoning.get(key).filter(|v| !v.is_null()) {
                kept.insert(key.into(), value.clone());
            }
        }
        line.insert("reasoning".into(), Value::Object(kept));
    }
    if let Some(summary) = item.get("conversationSummary").filter(|s| !s.is_null()) {
        line.insert("conversationSummary".into(), summary.clone());
    }
    line
}

/// A workspace folder as a path: `file:///home/dev/src/x` (newer VS Code builds) becomes
/// `/home/dev/src/x`, `file:///c%3A/src/x` becomes `c:/src/x`; a plain path stays.
pub(crate) fn workspace_path(directory: &str) -> String {
    let Some(rest) = directory.strip_prefix("file://") else {
        return directory.to_owned();
    };
    // A host before the path (`file://server/share`) stays, as a UNC-like path.
    let decoded = percent_decode(rest);
    let bytes = decoded.as_bytes();
    if bytes.len() >= 3 && bytes[0] == b'/' && bytes[1].is_ascii_alphabetic() && bytes[2] == b':' {
        return decoded[1..].to_owned();
    }
    if decoded.starts_with('/') {
        decoded
    } else {
        format!("//{decoded}")
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(high), Some(low)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((high * 16 + low) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One parsed index: its file's time and length when read, and each session's `dateCreated`.
type Index = (std::time::SystemTime, u64, HashMap<String, i64>);

/// The indexes read so far, by path: every session of a directory looks its start up in the
/// same index, which is parsed again only when it changed.
static INDEXES: Mutex<Option<HashMap<PathBuf, Index>>> = Mutex::new(None);

/// When the index at `index` says the session `id` was created (ms since the epoch).
fn date_created(index: &Path, id: &str) -> Option<i64> {
    let meta = std::fs::metadata(index).ok()?;
    let stamp = (meta.modified().ok()?, meta.len());
    let mut indexes = INDEXES.lock().unwrap_or_else(|e| e.into_inner());
    let indexes = indexes.get_or_insert_with(HashMap::new);
    let fresh = indexes
        .get(index)
        .is_some_and(|(time, len, _)| (*time, *len) == stamp);
    if !fresh {
        let dates = rendered::read_source(index)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .map(|value| index_dates(&value))
            .unwrap_or_default();
        indexes.insert(index.to_owned(), (stamp.0, stamp.1, dates));
    }
    indexes.get(index)?.2.get(id).copied()
}

/// Each session's `dateCreated` (a string of ms since the epoch, or a number) in an index.
fn index_dates(index: &Value) -> HashMap<String, i64> {
    index
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let id = entry.get("sessionId")?.as_str()?;
            let created = match entry.get("dateCreated")? {
                Value::String(text) => text.trim().parse().ok()?,
                Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64))?,
                _ => return None,
            };
            Some((id.to_owned(), created))
        })
        .collect()
}

/// Adapter state carried across runs in the checkpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ContinueState {
    tools: ToolNames,
    /// The session's chat model, for answers whose prompt log names none.
    model: String,
}

pub(crate) struct Continue<'a> {
    pub state: &'a mut ContinueState,
    pub self_tools: &'a SelfTools,
}

impl Continue<'_> {
    /// Normalises one rendered record.
    pub(crate) fn read(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        match record.get("record").and_then(Value::as_str) {
            Some("session") => {
                let text = |key: &str| record.get(key).and_then(Value::as_str).unwrap_or("");
                if !text("cwd").is_empty() {
                    out.cwd = Some(text("cwd").to_owned());
                }
                let title = text("title").trim();
                if !title.is_empty() && title != UNNAMED {
                    out.title = Some(title.to_owned());
                }
                if !text("chatModelTitle").is_empty() {
                    self.state.model = text("chatModelTitle").to_owned();
                }
                out.started_at = record.get("dateCreated").and_then(Value::as_i64);
            }
            Some("item") => self.item(record, raw, &mut out.drafts),
            Some("tool_result") => {
                let text = |key: &str| record.get(key).and_then(Value::as_str).unwrap_or("");
                let draft = self.result(text("toolCallId"), text("status"), text("output"), raw);
                out.drafts.push(draft);
            }
            _ => out.drafts.push(Draft::new(
                EventType::Unknown,
                None,
                String::new(),
                raw.to_owned(),
            )),
        }
    }

    fn item(&mut self, record: &Value, raw: &str, drafts: &mut Vec<Draft>) {
        let message = record.get("message").unwrap_or(&Value::Null);
        let content = message.get("content").map(message_text).unwrap_or_default();
        let model = record
            .get("model")
            .and_then(Value::as_str)
            .map_or_else(|| self.state.model.clone(), str::to_owned);
        let message_raw = message.to_string();
        match message.get("role").and_then(Value::as_str).unwrap_or("") {
            "user" => {
                if !content.trim().is_empty() {
                    let mut draft = Draft::new(EventType::UserInput, None, content, message_raw);
                    draft.starts_turn = true;
                    drafts.push(draft);
                }
                // What the prompt came with (files, selections, search results): context.
                let context: Vec<String> = record
                    .get("contextItems")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let field = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
                        format!("{}\n{}", field("name"), field("content"))
                            .trim()
                            .to_owned()
                    })
                    .filter(|text| !text.is_empty())
                    .collect();
                if !context.is_empty() {
                    let raw = record.get("contextItems").map(Value::to_string);
                    drafts.push(Draft::bookkeeping(
                        None,
                        context.join("\n\n"),
                        raw.unwrap_or_default(),
                    ));
                }
            }
            "assistant" | "thinking" => {
                let thinking = message.get("role").and_then(Value::as_str) == Some("thinking");
                if let Some(reasoning) = record.get("reasoning")
                    && let Some(text) = reasoning
                        .get("text")
                        .and_then(Value::as_str)
                        .filter(|t| !t.trim().is_empty())
                {
                    let ts = ["startAt", "endAt"]
                        .iter()
                        .find_map(|k| reasoning.get(*k).and_then(Value::as_i64));
                    let mut draft = Draft::new(
                        EventType::Reasoning,
                        ts,
                        text.to_owned(),
                        reasoning.to_string(),
                    );
                    draft.model.clone_from(&model);
                    drafts.push(draft);
                }
                let calls: &[Value] = message
                    .get("toolCalls")
                    .and_then(Value::as_array)
                    .map_or(&[], Vec::as_slice);
                if !content.trim().is_empty() {
                    let mut draft = if thinking {
                        Draft::new(EventType::Reasoning, None, content, message_raw)
                    } else {
                        let mut d =
                            Draft::new(EventType::AssistantResponse, None, content, message_raw);
                        d.commentary = !calls.is_empty();
                        d.may_end_turn = calls.is_empty();
                        d
                    };
                    draft.model.clone_from(&model);
                    drafts.push(draft);
                }
                for call in calls {
                    let name = call.get("name").and_then(Value::as_str).unwrap_or("tool");
                    let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                    // Arguments are JSON text; text that is not JSON is kept as it is.
                    let arguments = match call.get("arguments") {
                        Some(Value::String(text)) => serde_json::from_str(text)
                            .unwrap_or_else(|_| Value::String(text.clone())),
                        Some(other) => other.clone(),
                        None => Value::Null,
                    };
                    let mut draft = self.state.tools.call(
                        None,
                        name,
                        id,
                        &arguments,
                        call.to_string(),
                        self.self_tools,
                    );
                    draft.model.clone_from(&model);
                    drafts.push(draft);
                }
            }
            "tool" => {
                let field = |k: &str| message.get(k).and_then(Value::as_str).unwrap_or("");
                let draft = self.result(field("toolCallId"), field("status"), &content, raw);
                drafts.push(draft);
            }
            "system" => {
                if !content.trim().is_empty() {
                    drafts.push(Draft::bookkeeping(None, content, message_raw));
                }
            }
            _ => drafts.push(Draft::new(EventType::Unknown, None, content, message_raw)),
        }
        if let Some(summary) = record
            .get("conversationSummary")
            .map(message_text)
            .filter(|s| !s.trim().is_empty())
        {
            // Continue's own record of the conversation so far: it does not change how the
            // turn ended.
            let mut draft = Draft::new(EventType::Compaction, None, summary, raw.to_owned());
            draft.bookkeeping = true;
            drafts.push(draft);
        }
    }

    /// The result of call `id`, which finished as `status` (a cancelled call ends the turn).
    fn result(&mut self, id: &str, status: &str, output: &str, raw: &str) -> Draft {
        let text = if output.trim().is_empty() && !status.is_empty() && status != "done" {
            status.to_owned()
        } else {
            output.to_owned()
        };
        let mut draft = self.state.tools.result(None, id, text, raw.to_owned());
        match status {
            "errored" => draft.is_error = true,
            "canceled" => draft.ending = Some(Ending::Interrupted),
            _ => {}
        }
        draft
    }
}

/// A message's text: a string, or its parts' `text` (an image stands as `[image]`).
fn message_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| match p.get("type").and_then(Value::as_str) {
                    Some("imageUrl") => Some("[image]"),
                    _ => p.get("text").and_then(Value::as_str),
                })
                .collect();
            texts.join("\n")
        }
        _ => String::new(),
    }
}

// ---- The harness's log format -------------------------------------------------------------

/// Where Continue keeps its sessions and how they are recognised and named.
pub(crate) struct Format;

/// Reads one record of a Continue session.
pub(crate) fn read(
    state: &mut ContinueState,
    cx: &ReadContext<'_>,
    record: &Value,
    raw: &str,
    out: &mut AdapterOutput,
) {
    Continue {
        state,
        self_tools: cx.self_tools,
    }
    .read(record, raw, out);
}

impl LogFormat for Format {
    fn default_sources(&self) -> &'static [DefaultSource] {
        &[DefaultSource {
            name: "continue",
            glob: "~/.continue/sessions/*.json",
        }]
    }

    fn path_hints(&self) -> &'static [&'static str] {
        &["/.continue/"]
    }

    /// Sessions are named by their UUID.
    fn scan_names(&self) -> &'static [&'static str] {
        &["????????-????-????-????-????????????.json"]
    }

    /// A session file in a `sessions` directory; not the index beside them.
    fn is_log_name(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "json")
            && path.file_name().is_some_and(|n| n != INDEX_NAME)
            && dir_name(path, 1) == Some("sessions")
    }

    /// `{"sessionId", "title", "workspaceDirectory", "history": [{"message": {"role"}}]}`.
    fn detect_document(&self, document: &Value) -> bool {
        let text = |key: &str| document.get(key).is_some_and(Value::is_string);
        text("sessionId")
            && text("title")
            && text("workspaceDirectory")
            && document
                .get("history")
                .and_then(Value::as_array)
                .is_some_and(|items| {
                    items
                        .iter()
                        .all(|item| item.pointer("/message/role").is_some_and(Value::is_string))
                })
    }

    /// `sessions/<session uuid>.json`.
    fn identity_from_name(&self, path: &Path) -> Option<Identity> {
        let stem = stem(path)?;
        is_uuid(stem).then(|| Identity::main(stem))
    }

    /// The rendered header of a session saved under another name.
    fn identity_from_record(&self, record: &Map<String, Value>) -> Option<Identity> {
        (record.get("record").and_then(Value::as_str) == Some("session"))
            .then(|| id_text(record.get("sessionId")))
            .flatten()
            .map(|id| Identity::main(&id))
    }

    fn is_rendered(&self, _path: &Path) -> bool {
        true
    }

    fn render(&self, path: &Path) -> io::Result<Vec<u8>> {
        render(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(bytes: &[u8]) -> Vec<Value> {
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    }

    #[test]
    fn test_workspace_uris_become_paths() {
        assert_eq!(
            workspace_path("file:///home/dev/src/kiln"),
            "/home/dev/src/kiln"
        );
        assert_eq!(
            workspace_path("file:///home/dev/my%20app"),
            "/home/dev/my app"
        );
        assert_eq!(workspace_path("file:///c%3A/src/kiln"), "c:/src/kiln");
        assert_eq!(workspace_path("/home/dev/src/kiln"), "/home/dev/src/kiln");
        assert_eq!(workspace_path("C:\\src\\kiln"), "C:\\src\\kiln");
    }

    #[test]
    fn test_a_grown_session_renders_as_its_old_lines_and_new_ones() {
        let call = json!({"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"filepath\":\"a.rs\"}"}});
        let mut session = json!({
            "sessionId": "5b0c8e2a-1d3f-4a6b-9c8d-7e6f5a4b3c2d", "title": "New Session",
            "workspaceDirectory": "file:///home/dev/src/a", "mode": "agent",
            "history": [
                {"message": {"id": "m1", "role": "user", "content": "read a.rs"}, "contextItems": []},
                {"message": {"id": "m2", "role": "assistant", "content": "", "toolCalls": [call]}, "contextItems": [],
                 "toolCallStates": [{"toolCallId": "call_1", "toolCall": call, "status": "calling", "parsedArgs": {}}]},
            ]
        });
        let before = render_document(&session, None).unwrap();
        // The call finishes (its state changes in place), its result is saved, the answer streams.
        session["history"][1]["toolCallStates"][0]["status"] = json!("done");
        session["history"][1]["toolCallStates"][0]["output"] =
            json!([{"name": "a.rs", "description": "a.rs", "content": "fn main() {}"}]);
        session["history"][1]["promptLogs"] =
            json!([{"modelTitle": "Claude", "completionOptions": {"model": "claude-x"}}]);
        let grown = render_document(&session, None).unwrap();
        // The model is known only once the prompt log is written: that line is read again.
        let head = |b: &[u8]| lines(b)[..2].to_vec();
        assert_eq!(head(&grown), head(&before));
        let rendered = lines(&grown);
        assert_eq!(rendered[3]["record"], "tool_result");
        assert_eq!(rendered[3]["output"], "fn main() {}");
        // A `tool` message carrying the result: the state's output is not read twice.
        session["history"].as_array_mut().unwrap().push(json!({"message": {"id": "m3", "role": "tool", "toolCallId": "call_1", "content": "fn main() {}"}, "contextItems": []}));
        let answered = lines(&render_document(&session, None).unwrap());
        assert_eq!(answered.len(), 4);
        assert_eq!(answered[3]["message"]["role"], "tool");
        assert_eq!(answered[3]["message"]["status"], "done");
    }

    #[test]
    fn test_python_era_sessions_and_the_index_are_refused() {
        let old = json!({"history": {"timeline": [{"step": {"name": "UserInputStep"}}], "current_index": 0},
                         "session_info": {"session_id": "x", "title": "t", "date_created": "1"}});
        let err = render_document(&old, None).unwrap_err().to_string();
        assert!(err.contains("2023 Python extension"), "{err}");
        let steps = json!({"sessionId": "x", "title": "t", "workspaceDirectory": "/w", "history": [{"step": {}}]});
        assert!(render_document(&steps, None).is_err());
        assert!(!Format.detect_document(&old));
        assert!(!Format.is_log_name(Path::new("/h/.continue/sessions/sessions.json")));
        assert_eq!(
            index_dates(
                &json!([{"sessionId": "a", "title": "t", "dateCreated": "1747865620485"}, {"sessionId": "b", "dateCreated": 5}])
            ),
            HashMap::from([("a".to_owned(), 1_747_865_620_485), ("b".to_owned(), 5)])
        );
    }
}
