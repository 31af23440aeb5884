//! Gemini CLI chats (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, and the whole-file
//! `session-*.json` of versions before 0.39) rendered as they stand, and normalised into draft
//! events.
//!
//! The JSON Lines log is not a plain history: a message is written again, whole, each time it
//! changes (tokens, tool calls, results), `$set` records update the session's metadata, and
//! `$rewindTo` removes a message and everything after it. The rendering replays those records
//! the way Gemini CLI loads a chat: each message once, where it first appeared, as last written;
//! rewound messages gone. Messages a `$set.messages` checkpoint leaves out (compressed history)
//! stay: they were said. A turn starts at a prompt the user typed; it ends at an answer with no
//! tool calls, a cancellation or an error.

use super::identity::{Identity, dir_name, id_text, stem};
use super::{DefaultSource, LogFormat, ReadContext};
use std::collections::HashMap;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::adapter::{AdapterOutput, ToolNames};
use super::draft::{Draft, Ending, SelfTools, exit_code_in_text, parse_ts};
use super::rendered::{Rendering, invalid, json_lines};
use crate::vocab::EventType;

/// Renders a chat log (JSON Lines, or a whole-file JSON session) at `path`.
pub(crate) fn render(bytes: &[u8], path: &Path) -> io::Result<Vec<u8>> {
    let mut chat = Chat::default();
    let mut damaged = Vec::new();
    let whole_file = path.extension().is_some_and(|e| e == "json");
    if whole_file {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| invalid(format!("not valid JSON: {e}")))?;
        let Value::Object(record) = value else {
            return Err(invalid("not a Gemini CLI session"));
        };
        chat.header(record);
    } else {
        let (records, bad) = json_lines(bytes);
        damaged = bad;
        for record in records {
            chat.apply(record);
        }
    }
    if !chat.has_session() {
        return Err(invalid("not a Gemini CLI session (no sessionId)"));
    }
    Ok(chat.render(project_root(path), &damaged))
}

/// A chat as Gemini CLI loads it.
#[derive(Default)]
pub(crate) struct Chat {
    meta: Map<String, Value>,
    /// Messages in order of first appearance, each as last written.
    order: Vec<String>,
    messages: HashMap<String, Map<String, Value>>,
}

impl Chat {
    pub(crate) fn has_session(&self) -> bool {
        self.meta.contains_key("sessionId")
    }

    fn apply(&mut self, mut record: Map<String, Value>) {
        if let Some(target) = record.get("$rewindTo").and_then(Value::as_str) {
            // The target and every message after it go; an unknown target clears the chat.
            let at = self.order.iter().position(|id| id == target).unwrap_or(0);
            for id in self.order.drain(at..) {
                self.messages.remove(&id);
            }
        } else if record.get("id").is_some_and(Value::is_string) {
            self.upsert(record);
        } else if let Some(Value::Object(set)) = record.remove("$set") {
            for (key, value) in set {
                if key == "messages" {
                    self.upsert_all(value);
                } else {
                    self.meta.insert(key, value);
                }
            }
        } else if record.contains_key("sessionId") && record.contains_key("projectHash") {
            self.header(record);
        }
    }

    /// A header (or a whole legacy session on one line): metadata, and any messages it holds.
    pub(crate) fn header(&mut self, mut record: Map<String, Value>) {
        if let Some(messages) = record.remove("messages") {
            self.upsert_all(messages);
        }
        self.meta.extend(record);
    }

    fn upsert_all(&mut self, messages: Value) {
        if let Value::Array(messages) = messages {
            for message in messages {
                if let Value::Object(message) = message
                    && message.get("id").is_some_and(Value::is_string)
                {
                    self.upsert(message);
                }
            }
        }
    }

    fn upsert(&mut self, message: Map<String, Value>) {
        let id = message["id"].as_str().unwrap_or_default().to_owned();
        if self.messages.insert(id.clone(), message).is_none() {
            self.order.push(id);
        }
    }

    /// The rendering: the header, then `damaged` lines, then the messages.
    pub(crate) fn render(mut self, project_root: Option<String>, damaged: &[&[u8]]) -> Vec<u8> {
        let mut out = Rendering::default();
        let mut header = Map::new();
        // The summary too: it is written late (at the next start of the CLI), and a header that
        // changes once costs one re-read, where a last line would change at every message.
        for key in ["sessionId", "projectHash", "startTime", "kind", "summary"] {
            if let Some(value) = self.meta.get(key) {
                header.insert(key.into(), value.clone());
            }
        }
        if let Some(root) = project_root {
            header.insert("projectRoot".into(), Value::String(root));
        }
        out.push("session", header);
        out.push_damaged(damaged);
        for id in &self.order {
            if let Some(mut message) = self.messages.remove(id) {
                // Qwen Code's whole-file sessions name the model's messages after it.
                if message.get("type").and_then(Value::as_str) == Some("qwen") {
                    message.insert("type".into(), Value::String("gemini".into()));
                }
                out.push("message", message);
            }
        }
        out.into_bytes()
    }
}

/// The project a chat belongs to: `tmp/<project>/.project_root` (a sub-agent's chat sits one
/// directory deeper, under its parent session's).
fn project_root(path: &Path) -> Option<String> {
    path.ancestors().skip(1).take(3).find_map(|dir| {
        let root = std::fs::read_to_string(dir.join(".project_root")).ok()?;
        let root = root.trim();
        (!root.is_empty()).then(|| root.to_owned())
    })
}

/// Most calls whose results were already read from the call itself, remembered to skip the
/// copy Gemini CLI also records as a message of function responses.
const ANSWERED_CALLS: usize = 256;

/// Adapter state carried across runs in the checkpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct GeminiState {
    tools: ToolNames,
    answered: std::collections::VecDeque<String>,
}

pub(crate) struct Gemini<'a> {
    pub state: &'a mut GeminiState,
    pub self_tools: &'a SelfTools,
}

impl Gemini<'_> {
    /// Normalises one rendered record.
    pub(crate) fn read(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        match record.get("record").and_then(Value::as_str) {
            Some("session") => {
                if let Some(root) = record.get("projectRoot").and_then(Value::as_str) {
                    out.cwd = Some(root.to_owned());
                }
                if let Some(summary) = record.get("summary").and_then(Value::as_str) {
                    out.title = Some(summary.to_owned());
                    out.summary = Some(summary.to_owned());
                }
            }
            Some("message") => self.message(record, raw, out),
            _ => out.drafts.push(Draft::new(
                EventType::Unknown,
                parse_ts(record.get("timestamp")),
                String::new(),
                raw.to_owned(),
            )),
        }
    }

    fn message(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        let ts = parse_ts(record.get("timestamp"));
        let content = record.get("content").unwrap_or(&Value::Null);
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        let drafts = &mut out.drafts;
        match kind {
            "user" => self.user(record, content, ts, raw, drafts),
            "gemini" => self.answer(record, content, ts, raw, drafts),
            "info" | "warning" | "error" => {
                let text = parts_text(content, false);
                let mut draft;
                if kind == "error" {
                    draft = Draft::new(EventType::Runtime, ts, text, raw.to_owned());
                    draft.is_error = true;
                    draft.ending = Some(Ending::Failed);
                } else if is_cancellation(&text) {
                    draft = Draft::new(EventType::Runtime, ts, text, raw.to_owned());
                    draft.ending = Some(Ending::Interrupted);
                } else {
                    draft = Draft::bookkeeping(ts, text, raw.to_owned());
                }
                drafts.push(draft);
            }
            _ => drafts.push(Draft::new(
                EventType::Unknown,
                ts,
                parts_text(content, false),
                raw.to_owned(),
            )),
        }
    }

    fn user(
        &mut self,
        record: &Value,
        content: &Value,
        ts: Option<i64>,
        raw: &str,
        drafts: &mut Vec<Draft>,
    ) {
        let parts = as_parts(content);
        let responses: Vec<&Value> = parts
            .iter()
            .filter_map(|p| p.get("functionResponse"))
            .collect();
        if !responses.is_empty() {
            // Tool results sent back to the model: those already read with their call are
            // copies.
            for response in responses {
                let id = response.get("id").and_then(Value::as_str).unwrap_or("");
                if self.state.answered.iter().any(|a| a == id) {
                    continue;
                }
                let text = response_text(response.get("response"));
                let mut draft = self.state.tools.result(ts, id, text, response.to_string());
                draft.is_error = response.pointer("/response/error").is_some();
                drafts.push(draft);
            }
            let text = parts_text(content, false);
            if text.trim().is_empty() {
                return;
            }
        }
        // A message the CLI sent by itself (an automatic continuation after a tool's answer,
        // shown as that answer): not a prompt.
        let display = record.get("displayContent");
        let sent_by_cli = display.is_some_and(|d| {
            as_parts(d)
                .iter()
                .any(|p| p.get("functionResponse").is_some())
        }) || parts_text(content, false)
            .trim_start()
            .starts_with("System: Please continue");
        if sent_by_cli {
            drafts.push(Draft::bookkeeping(
                ts,
                parts_text(content, false),
                raw.to_owned(),
            ));
            return;
        }
        // What the user typed, where it differs from what the model got (`@file` expanded, a
        // custom command's prompt).
        let sent = parts_text(content, false);
        let shown = display
            .map(|c| parts_text(c, false))
            .filter(|t| !t.trim().is_empty());
        let expanded = shown.as_ref().is_some_and(|shown| *shown != sent);
        let typed = shown.unwrap_or(sent);
        let head = typed.trim_start();
        // A CLI command the CLI answered itself (`/stats`), or context it added: the harness's
        // business, not a prompt. A command that sent the model a prompt (`/init`) is one.
        let harness = head.starts_with('/') && !expanded
            || ["<session_context>", "<hook_context>"]
                .iter()
                .any(|p| head.starts_with(p));
        let typed_any = !head.is_empty();
        if harness {
            drafts.push(Draft::bookkeeping(ts, typed, raw.to_owned()));
        } else {
            let mut draft = Draft::new(EventType::UserInput, ts, typed, raw.to_owned());
            draft.starts_turn = typed_any;
            drafts.push(draft);
        }
    }

    fn answer(
        &mut self,
        record: &Value,
        content: &Value,
        ts: Option<i64>,
        raw: &str,
        drafts: &mut Vec<Draft>,
    ) {
        let model = record
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let calls = record
            .get("toolCalls")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let thoughts = record
            .get("thoughts")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for thought in thoughts {
            let subject = thought.get("subject").and_then(Value::as_str).unwrap_or("");
            let description = thought
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            let text = match (subject.is_empty(), description.is_empty()) {
                (false, false) => format!("{subject}: {description}"),
                (false, true) => subject.to_owned(),
                _ => description.to_owned(),
            };
            let mut draft = Draft::new(
                EventType::Reasoning,
                parse_ts(thought.get("timestamp")).or(ts),
                text,
                thought.to_string(),
            );
            draft.model.clone_from(&model);
            drafts.push(draft);
        }
        let parts = as_parts(content);
        if thoughts.is_empty() {
            // Thoughts kept as parts (a chat rewritten from the model's history).
            for part in parts.iter().filter(|p| is_thought(p)) {
                let text = part.get("text").and_then(Value::as_str).unwrap_or("");
                let mut draft =
                    Draft::new(EventType::Reasoning, ts, text.to_owned(), part.to_string());
                draft.model.clone_from(&model);
                drafts.push(draft);
            }
        }
        let text = parts_text(content, false);
        if !text.trim().is_empty() {
            let mut draft = Draft::new(EventType::AssistantResponse, ts, text, raw.to_owned());
            draft.model.clone_from(&model);
            // Text said before tool calls is progress; an answer with none ends the turn.
            draft.commentary = !calls.is_empty();
            draft.may_end_turn = calls.is_empty();
            drafts.push(draft);
        }
        for call in calls {
            self.call(call, ts, &model, drafts);
        }
        // Calls kept as parts that the tool-call records do not hold.
        for part in &*parts {
            let Some(call) = part.get("functionCall") else {
                continue;
            };
            let id = call.get("id").and_then(Value::as_str).unwrap_or("");
            if !id.is_empty() && self.state.tools.lookup(id).is_some() {
                continue;
            }
            let raw = call.to_string();
            drafts.push(function_call(
                &mut self.state.tools,
                call,
                ts,
                &model,
                raw,
                self.self_tools,
            ));
        }
    }

    /// A tool call record: the call, then its result when it has one.
    fn call(&mut self, call: &Value, ts: Option<i64>, model: &str, drafts: &mut Vec<Draft>) {
        let ts = parse_ts(call.get("timestamp")).or(ts);
        let name = call.get("name").and_then(Value::as_str).unwrap_or("tool");
        let id = call.get("id").and_then(Value::as_str).unwrap_or("");
        let mut narrowed = call.clone();
        if let Some(fields) = narrowed.as_object_mut() {
            for key in ["result", "resultDisplay"] {
                fields.remove(key);
            }
        }
        let raw = narrowed.to_string();
        drafts.push(function_call(
            &mut self.state.tools,
            call,
            ts,
            model,
            raw,
            self.self_tools,
        ));
        let status = call.get("status").and_then(Value::as_str).unwrap_or("");
        let result = call.get("result").filter(|r| !r.is_null());
        let display = call.get("resultDisplay").filter(|r| !r.is_null());
        if result.is_none() && display.is_none() && !matches!(status, "error" | "cancelled") {
            return;
        }
        let mut text: Vec<String> = result
            .map(as_parts)
            .unwrap_or_default()
            .iter()
            .filter_map(|p| p.get("functionResponse"))
            .map(|r| response_text(r.get("response")))
            .filter(|t| !t.is_empty())
            .collect();
        if text.is_empty()
            && let Some(display) = display
        {
            text.push(display_text(display));
        }
        let raw = serde_json::json!({"id": id, "status": status, "result": result, "resultDisplay": display});
        let mut response = self
            .state
            .tools
            .result(ts, id, text.join("\n"), raw.to_string());
        response.is_error = status == "error";
        if status == "cancelled" {
            response.ending = Some(Ending::Interrupted);
        }
        if is_shell(name) {
            // Gemini CLI writes `Exit Code: N` only when it is not 0.
            response.exit_code = exit_code_in_text(&response.text)
                .or((status == "success" && !response.text.contains("Exit Code:")).then_some(0));
        }
        if !id.is_empty() {
            if self.state.answered.len() == ANSWERED_CALLS {
                self.state.answered.pop_front();
            }
            self.state.answered.push_back(id.to_owned());
        }
        drafts.push(response);
    }
}

/// The tool call of a `{name, id, args}` record (a `functionCall` part, or Gemini CLI's record
/// of a call), made by `model`.
pub(crate) fn function_call(
    tools: &mut ToolNames,
    call: &Value,
    ts: Option<i64>,
    model: &str,
    raw: String,
    self_tools: &SelfTools,
) -> Draft {
    let name = call.get("name").and_then(Value::as_str).unwrap_or("tool");
    let id = call.get("id").and_then(Value::as_str).unwrap_or("");
    let args = call.get("args").unwrap_or(&Value::Null);
    let mut draft = tools.call(ts, name, id, args, raw, self_tools);
    draft.model = model.to_owned();
    draft
}

/// Gemini CLI's and Qwen Code's shell tool.
pub(crate) fn is_shell(name: &str) -> bool {
    matches!(name, "run_shell_command" | "shell" | "Shell")
}

/// The notices Gemini CLI and Qwen Code print when the user cancels a request.
pub(crate) fn is_cancellation(text: &str) -> bool {
    let text = text.trim_start();
    text.starts_with("Request cancelled") || text.starts_with("User cancelled")
}

/// A message's content as parts: a string is one text part, a part is a list of one.
pub(crate) fn as_parts(content: &Value) -> std::borrow::Cow<'_, [Value]> {
    match content {
        Value::Array(parts) => std::borrow::Cow::Borrowed(parts),
        Value::String(text) => std::borrow::Cow::Owned(vec![serde_json::json!({ "text": text })]),
        Value::Object(_) => std::borrow::Cow::Owned(vec![content.clone()]),
        _ => std::borrow::Cow::Owned(Vec::new()),
    }
}

pub(crate) fn is_thought(part: &Value) -> bool {
    part.get("thought").and_then(Value::as_bool) == Some(true)
}

/// The text parts of a content (thoughts only when `thoughts`), joined; attachments named.
pub(crate) fn parts_text(content: &Value, thoughts: bool) -> String {
    let mut texts = Vec::new();
    for part in as_parts(content).iter() {
        if is_thought(part) != thoughts {
            continue;
        }
        if let Some(text) = part.get("text").and_then(Value::as_str) {
            texts.push(text.to_owned());
        } else if let Some(data) = part.get("inlineData").or_else(|| part.get("fileData")) {
            let kind = data
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("attachment");
            texts.push(format!("[{kind}]"));
        }
    }
    texts.join("\n")
}

/// The text of a function response: its `output` or `error` (JSON when not a string).
pub(crate) fn response_text(response: Option<&Value>) -> String {
    let Some(response) = response else {
        return String::new();
    };
    let pick = ["output", "error", "content"]
        .iter()
        .find_map(|k| response.get(*k));
    match pick.unwrap_or(response) {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        Value::Object(error) if error.get("message").is_some_and(Value::is_string) => {
            error["message"].as_str().unwrap_or_default().to_owned()
        }
        other => other.to_string(),
    }
}

/// What the user saw of a result: text, or a file diff as its name and diff.
pub(crate) fn display_text(display: &Value) -> String {
    match display {
        Value::String(text) => text.clone(),
        Value::Object(fields) => {
            let name = fields.get("fileName").and_then(Value::as_str).unwrap_or("");
            match fields.get("fileDiff").and_then(Value::as_str) {
                Some(diff) => format!("{name}\n{diff}"),
                None => display.to_string(),
            }
        }
        other => other.to_string(),
    }
}

// ---- The harness's log format -------------------------------------------------------------

/// Where Gemini CLI keeps its logs and how they are recognised and named.
pub(crate) struct Format;

/// Reads one record of a Gemini CLI log.
pub(crate) fn read(
    state: &mut GeminiState,
    cx: &ReadContext<'_>,
    record: &Value,
    raw: &str,
    out: &mut AdapterOutput,
) {
    Gemini {
        state,
        self_tools: cx.self_tools,
    }
    .read(record, raw, out);
}

impl LogFormat for Format {
    fn default_sources(&self) -> &'static [DefaultSource] {
        &[DefaultSource {
            name: "gemini",
            glob: "~/.gemini/tmp/*/chats/**/*.json*",
        }]
    }

    fn path_hints(&self) -> &'static [&'static str] {
        &["/.gemini/"]
    }

    fn scan_names(&self) -> &'static [&'static str] {
        &["*.jsonl", "session-*.json"]
    }

    fn is_log_name(&self, path: &Path) -> bool {
        path.extension()
            .is_some_and(|e| e == "json" || e == "jsonl")
    }

    fn detect_record(&self, record: &Map<String, Value>) -> bool {
        let has = |key: &str| record.contains_key(key);
        has("sessionId") && has("projectHash") || has("$rewindTo") || has("$set")
    }

    /// `{"sessionId", "messages"}` (Qwen Code's holds `qwen` messages; Copilot CLI's older
    /// sessions `chatMessages` and a `timeline`).
    fn detect_document(&self, document: &Value) -> bool {
        document.get("sessionId").is_some()
            && document.get("messages").is_some()
            && !holds_qwen_messages(document)
            && document.get("chatMessages").is_none()
            && document.get("timeline").is_none()
    }

    /// `chats/<parent session>/<agent>.jsonl`; main chats are named by time and the first 8
    /// characters of their id only.
    fn identity_from_name(&self, path: &Path) -> Option<Identity> {
        let (session, stem) = (dir_name(path, 1)?, stem(path)?);
        (dir_name(path, 2)? == "chats").then(|| Identity::child(format!("{session}/{stem}")))
    }

    /// A chat's header (as written, or rendered).
    fn identity_from_record(&self, record: &Map<String, Value>) -> Option<Identity> {
        let session = id_text(record.get("sessionId"))?;
        Some(Identity {
            native_id: session,
            subagent: record.get("kind").and_then(Value::as_str) == Some("subagent"),
        })
    }

    fn is_rendered(&self, _path: &Path) -> bool {
        true
    }

    fn render(&self, path: &Path) -> io::Result<Vec<u8>> {
        render(&super::rendered::read_source(path)?, path)
    }

    /// A whole-file session Gemini CLI migrated to JSON Lines (and left behind).
    fn superseded(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "json")
    }
}

/// Whether a whole-file session's messages are Qwen Code's.
pub(crate) fn holds_qwen_messages(document: &Value) -> bool {
    document
        .get("messages")
        .and_then(Value::as_array)
        .is_some_and(|m| {
            m.iter()
                .any(|m| m.get("type").and_then(Value::as_str) == Some("qwen"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rendered(lines: &[Value]) -> Vec<Value> {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let bytes = render(text.as_bytes(), Path::new("/nowhere/chats/s.jsonl")).unwrap();
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    }

    fn ids(records: &[Value]) -> Vec<&str> {
        records
            .iter()
            .filter_map(|r| r.get("id").and_then(Value::as_str))
            .collect()
    }

    #[test]
    fn test_messages_are_upserted_in_place_and_rewinds_remove_the_rest() {
        let header =
            json!({"sessionId": "s", "projectHash": "h", "startTime": "2026-01-01T00:00:00Z"});
        let a = json!({"id": "a", "type": "user", "content": "one"});
        let b = json!({"id": "b", "type": "gemini", "content": "two"});
        let b2 = json!({"id": "b", "type": "gemini", "content": "two, with tokens"});
        let c = json!({"id": "c", "type": "user", "content": "three"});
        let records = rendered(&[header.clone(), a.clone(), b, c.clone(), b2]);
        assert_eq!(ids(&records), ["a", "b", "c"]);
        assert_eq!(records[2]["content"], "two, with tokens");
        let records = rendered(&[
            header.clone(),
            a.clone(),
            c.clone(),
            json!({"$rewindTo": "c"}),
            json!({"id": "d", "type": "user", "content": "four"}),
        ]);
        assert_eq!(ids(&records), ["a", "d"]);
        let records = rendered(&[header, a, json!({"$rewindTo": "gone"}), c]);
        assert_eq!(ids(&records), ["c"]);
    }

    #[test]
    fn test_a_checkpoint_keeps_compressed_history_and_sets_update_metadata() {
        let records = rendered(&[
            json!({"sessionId": "s", "projectHash": "h"}),
            json!({"id": "a", "type": "user", "content": "one"}),
            json!({"$set": {"messages": [{"id": "z", "type": "user", "content": "summary"}]}}),
            json!({"$set": {"summary": "Fix the parser"}}),
        ]);
        assert_eq!(ids(&records), ["a", "z"]);
        assert_eq!(records[0]["summary"], "Fix the parser");
    }

    #[test]
    fn test_a_log_without_a_session_id_is_refused() {
        let text = "{\"id\":\"a\",\"type\":\"user\",\"content\":\"x\"}\n";
        assert!(render(text.as_bytes(), Path::new("x.jsonl")).is_err());
    }

    #[test]
    fn test_a_call_and_its_result_copy_make_one_result() {
        let tools = SelfTools::new(&[]);
        let mut gemini = Gemini {
            state: &mut GeminiState::default(),
            self_tools: &tools,
        };
        let mut out = AdapterOutput::default();
        let answer = json!({"record": "message", "id": "m", "type": "gemini", "content": "", "toolCalls": [
            {"id": "c1", "name": "run_shell_command", "args": {"command": "false"}, "status": "success",
             "result": [{"functionResponse": {"id": "c1", "name": "run_shell_command",
                         "response": {"output": "Output: (empty)\nExit Code: 1"}}}]}]});
        gemini.read(&answer, "{}", &mut out);
        let copy = json!({"record": "message", "id": "u", "type": "user", "content": [
            {"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "x"}}}]});
        gemini.read(&copy, "{}", &mut out);
        let kinds: Vec<_> = out.drafts.iter().map(|d| d.event_type).collect();
        assert_eq!(kinds, [EventType::ToolCall, EventType::ToolResponse]);
        assert_eq!(out.drafts[1].exit_code, Some(1));
        assert_eq!(out.drafts[1].tool_name, "run_shell_command");
    }
}
