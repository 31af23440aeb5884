//! GitHub Copilot CLI sessions (`~/.copilot/session-state/<session>/events.jsonl`, the older
//! flat `session-state/<session>.jsonl`, and before those (0.0.341 and older) whole-file
//! sessions `history-session-state/session_<session>_<ms>.json`) normalised into draft events.
//!
//! Each line is an event `{type, data, id, timestamp, parentId}`. A turn starts at a
//! `user.message` typed while the agent was idle (not one steered into a running turn, not a
//! sub-agent's); it ends at the `assistant.turn_end` after an answer with no tool requests, at an
//! `abort` or at a `session.error`. A sub-agent's events sit in the same file, marked by
//! `parentToolCallId` or `agentId`.

use std::path::Path;

use super::identity::{Identity, dir_name, id_text, is_uuid, stem};
use super::{DefaultSource, LogFormat, ReadContext};
use std::collections::HashMap;
use std::io;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::adapter::{AdapterOutput, ToolNames};
use super::draft::{Draft, Ending, SelfTools, exit_code_in_text, parse_ts};
use super::rendered::{Rendering, invalid};
use crate::vocab::EventType;

/// A whole-file session of Copilot CLI 0.0.341 and older — `{sessionId, startTime,
/// chatMessages, timeline, selectedModel}`, rewritten whole as it grows — rendered as JSON Lines:
/// a header, then its timeline (what the person saw, with times), each finished tool call with
/// the output the model got (from `chatMessages`, joined by call id).
pub(crate) fn render_legacy(bytes: &[u8]) -> io::Result<Vec<u8>> {
    let document: Value =
        serde_json::from_slice(bytes).map_err(|e| invalid(format!("not valid JSON: {e}")))?;
    let mut out = Rendering::default();
    legacy_lines(&document, &mut out)?;
    Ok(out.into_bytes())
}

/// Appends the lines a legacy session document renders as.
fn legacy_lines(document: &Value, out: &mut Rendering) -> io::Result<()> {
    let Some(id) = document.get("sessionId").and_then(Value::as_str) else {
        return Err(invalid("not a Copilot CLI session (no sessionId)"));
    };
    let mut header = Map::new();
    header.insert("sessionId".into(), Value::String(id.to_owned()));
    for key in ["startTime", "selectedModel"] {
        if let Some(value) = document.get(key).filter(|v| !v.is_null()) {
            header.insert(key.into(), value.clone());
        }
    }
    out.push("session", header);
    // What each tool answered, as the model got it.
    let mut outputs: HashMap<&str, &Value> = HashMap::new();
    for message in document
        .get("chatMessages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if message.get("role").and_then(Value::as_str) == Some("tool")
            && let Some(call) = message.get("tool_call_id").and_then(Value::as_str)
            && let Some(content) = message.get("content")
        {
            outputs.insert(call, content);
        }
    }
    for entry in document
        .get("timeline")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Value::Object(entry) = entry else {
            continue;
        };
        let mut fields = entry.clone();
        let call = entry.get("callId").and_then(Value::as_str);
        if let Some(output) = call.and_then(|c| outputs.get(c)) {
            fields.insert("output".into(), (*output).clone());
        }
        out.push("entry", fields);
    }
    Ok(())
}

/// Adapter state carried across runs in the checkpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct CopilotState {
    tools: ToolNames,
    model: String,
    /// The turn's last answer requested no tools: its `turn_end` ends the user's turn.
    answered: bool,
    /// A reasoning event came since the turn began (the message's inline copy is skipped).
    reasoned: bool,
}

pub(crate) struct Copilot<'a> {
    pub state: &'a mut CopilotState,
    pub self_tools: &'a SelfTools,
}

impl Copilot<'_> {
    /// Normalises one event, or one line of a rendered whole-file session.
    pub(crate) fn read(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        if record.get("record").is_some() {
            return self.legacy(record, raw, out);
        }
        if record.get("ephemeral").and_then(Value::as_bool) == Some(true) {
            return;
        }
        let ts = parse_ts(record.get("timestamp"));
        let data = record.get("data").unwrap_or(&Value::Null);
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        let sidechain = record.get("agentId").is_some_and(|a| !a.is_null())
            || data.get("parentToolCallId").is_some_and(|p| !p.is_null());
        let text = |key: &str| {
            data.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let mut drafts = Vec::new();
        match kind {
            "session.start" | "session.resume" | "session.context_changed" => {
                let context = data.get("context").unwrap_or(data);
                if let Some(cwd) = context.get("cwd").and_then(Value::as_str) {
                    out.cwd = Some(cwd.to_owned());
                }
                if let Some(model) = data.get("selectedModel").and_then(Value::as_str) {
                    self.state.model = model.to_owned();
                }
                drafts.push(Draft::bookkeeping(
                    ts,
                    kind.replace('.', " "),
                    raw.to_owned(),
                ));
            }
            "session.model_change" => {
                self.state.model = text("newModel");
                drafts.push(Draft::bookkeeping(
                    ts,
                    format!("model: {}", text("newModel")),
                    raw.to_owned(),
                ));
            }
            "user.message" => {
                let content = text("content");
                if content.trim().is_empty() {
                    return;
                }
                let mut draft = Draft::new(EventType::UserInput, ts, content, raw.to_owned());
                // Steered into a running turn: part of it.
                draft.starts_turn =
                    data.get("delivery").and_then(Value::as_str) != Some("steering");
                self.state.answered = false;
                self.state.reasoned = false;
                drafts.push(draft);
            }
            "assistant.turn_start" => {
                if let Some(model) = data.get("model").and_then(Value::as_str) {
                    self.state.model = model.to_owned();
                }
                self.state.reasoned = false;
            }
            "assistant.reasoning" => {
                self.state.reasoned = true;
                let mut draft =
                    Draft::new(EventType::Reasoning, ts, text("content"), raw.to_owned());
                draft.model.clone_from(&self.state.model);
                drafts.push(draft);
            }
            "assistant.message" => self.message(data, ts, raw, &mut drafts),
            "assistant.turn_end" => {
                if self.state.answered && !sidechain {
                    let mut draft =
                        Draft::new(EventType::Runtime, ts, "turn end".into(), raw.to_owned());
                    draft.ending = Some(Ending::Completed);
                    drafts.push(draft);
                }
            }
            "tool.user_requested" => {
                let name = data
                    .get("toolName")
                    .and_then(Value::as_str)
                    .unwrap_or("tool");
                let args = data.get("arguments").unwrap_or(&Value::Null);
                let id = text("toolCallId");
                let call =
                    self.state
                        .tools
                        .call(ts, name, &id, args, raw.to_owned(), self.self_tools);
                drafts.push(call);
            }
            // The call was read from the message that requested it.
            "tool.execution_start" => {}
            "tool.execution_complete" => drafts.push(self.result(data, ts, raw)),
            "abort" => {
                let mut draft = Draft::new(
                    EventType::Runtime,
                    ts,
                    format!("aborted: {}", text("reason")),
                    raw.to_owned(),
                );
                draft.ending = Some(Ending::Interrupted);
                drafts.push(draft);
            }
            "session.error" => {
                let mut draft = Draft::new(EventType::Runtime, ts, text("message"), raw.to_owned());
                draft.is_error = true;
                draft.ending = Some(Ending::Failed);
                drafts.push(draft);
            }
            "session.compaction_complete" => {
                let summary = text("summaryContent");
                let body = if summary.is_empty() {
                    "context compacted".to_owned()
                } else {
                    summary
                };
                drafts.push(Draft::new(EventType::Compaction, ts, body, raw.to_owned()));
            }
            "session.truncation" | "session.context_cleared" => drafts.push(Draft::new(
                EventType::Compaction,
                ts,
                kind.replace(['.', '_'], " "),
                raw.to_owned(),
            )),
            "system.message" | "system.notification" => {
                drafts.push(Draft::bookkeeping(ts, text("content"), raw.to_owned()));
            }
            "session.import_legacy" => {
                // A whole-file session carried over when it was resumed (the file itself is
                // then deleted): its history is this session's beginning.
                drafts.push(Draft::bookkeeping(
                    ts,
                    "imported an older session".into(),
                    raw.to_owned(),
                ));
                let mut lines = Rendering::default();
                if let Some(legacy) = data.get("legacySession")
                    && legacy_lines(legacy, &mut lines).is_ok()
                {
                    let bytes = lines.into_bytes();
                    for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                        if let Ok(record) = serde_json::from_slice::<Value>(line) {
                            self.legacy(&record, &String::from_utf8_lossy(line), out);
                        }
                    }
                }
            }
            _ if kind.starts_with("session.")
                || kind.starts_with("subagent.")
                || kind.starts_with("hook.")
                || kind.starts_with("permission.")
                || kind.starts_with("skill.") =>
            {
                let detail = ["message", "agentName", "name", "newMode"]
                    .iter()
                    .find_map(|k| data.get(*k).and_then(Value::as_str));
                let name = kind.replace(['.', '_'], " ");
                let body = detail.map_or(name.clone(), |d| format!("{name}: {d}"));
                drafts.push(Draft::bookkeeping(ts, body, raw.to_owned()));
            }
            _ => drafts.push(Draft::new(
                EventType::Unknown,
                ts,
                String::new(),
                raw.to_owned(),
            )),
        }
        for mut draft in drafts {
            if sidechain {
                draft.mark_sidechain();
            }
            out.drafts.push(draft);
        }
    }

    /// A line of a rendered whole-file session: its header, or an entry of its timeline. A
    /// turn starts at what the person typed; the log records no stop reasons, so an answer ends
    /// its turn when nothing but bookkeeping follows it.
    fn legacy(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        let ts = parse_ts(record.get("timestamp"));
        let text = |key: &str| {
            record
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let model = self.state.model.clone();
        let drafts = &mut out.drafts;
        match (
            record.get("record").and_then(Value::as_str),
            record.get("type").and_then(Value::as_str).unwrap_or(""),
        ) {
            (Some("session"), _) => {
                if let Some(model) = record.get("selectedModel").and_then(Value::as_str) {
                    self.state.model = model.to_owned();
                }
                out.started_at = parse_ts(record.get("startTime"));
            }
            (_, "user") => {
                let typed = text("text");
                if typed.trim().is_empty() {
                    return;
                }
                let mut draft = Draft::new(EventType::UserInput, ts, typed, raw.to_owned());
                draft.starts_turn = true;
                drafts.push(draft);
            }
            (_, "copilot") => {
                let mut draft = Draft::new(
                    EventType::AssistantResponse,
                    ts,
                    text("text"),
                    raw.to_owned(),
                );
                draft.model = model;
                draft.may_end_turn = true;
                drafts.push(draft);
            }
            (_, "info") => drafts.push(Draft::bookkeeping(ts, text("text"), raw.to_owned())),
            (_, "error") => {
                let mut draft = Draft::new(EventType::Runtime, ts, text("text"), raw.to_owned());
                draft.is_error = true;
                drafts.push(draft);
            }
            (_, kind @ ("tool_call_requested" | "tool_call_completed")) => {
                let name = record.get("name").and_then(Value::as_str).unwrap_or("tool");
                let id = text("callId");
                let args = record.get("arguments").unwrap_or(&Value::Null);
                let mut call_raw = record.clone();
                if let Some(fields) = call_raw.as_object_mut() {
                    fields.remove("result");
                    fields.remove("output");
                }
                let mut call = self.state.tools.call(
                    ts,
                    name,
                    &id,
                    args,
                    call_raw.to_string(),
                    self.self_tools,
                );
                call.model = model;
                drafts.push(call);
                if kind == "tool_call_requested" {
                    return;
                }
                let result = record.get("result").unwrap_or(&Value::Null);
                let outcome = result.get("type").and_then(Value::as_str).unwrap_or("");
                let body = match record.get("output") {
                    Some(Value::String(text)) => text.clone(),
                    Some(Value::Array(parts)) => parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => result
                        .get("log")
                        .and_then(Value::as_str)
                        .unwrap_or(outcome)
                        .to_owned(),
                };
                let mut response = self.state.tools.result(ts, &id, body, result.to_string());
                response.is_error = outcome != "success";
                if matches!(outcome, "rejected" | "denied") {
                    response.ending = Some(Ending::Interrupted);
                }
                if matches!(name, "bash" | "powershell") {
                    response.exit_code =
                        exited_with(&response.text).or_else(|| exit_code_in_text(&response.text));
                }
                drafts.push(response);
            }
            _ => drafts.push(Draft::new(
                EventType::Unknown,
                ts,
                String::new(),
                raw.to_owned(),
            )),
        }
    }

    fn message(&mut self, data: &Value, ts: Option<i64>, raw: &str, drafts: &mut Vec<Draft>) {
        if let Some(model) = data.get("model").and_then(Value::as_str) {
            self.state.model = model.to_owned();
        }
        let model = self.state.model.clone();
        let requests = data
            .get("toolRequests")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        if !self.state.reasoned
            && let Some(reasoning) = data
                .get("reasoningText")
                .and_then(Value::as_str)
                .filter(|r| !r.trim().is_empty())
        {
            let mut draft = Draft::new(
                EventType::Reasoning,
                ts,
                reasoning.to_owned(),
                raw.to_owned(),
            );
            draft.model.clone_from(&model);
            drafts.push(draft);
        }
        let content = data.get("content").and_then(Value::as_str).unwrap_or("");
        if !content.trim().is_empty() {
            let mut draft = Draft::new(
                EventType::AssistantResponse,
                ts,
                content.to_owned(),
                raw.to_owned(),
            );
            draft.model.clone_from(&model);
            draft.commentary = !requests.is_empty();
            drafts.push(draft);
        }
        self.state.answered = requests.is_empty() && !content.trim().is_empty();
        for request in requests {
            let name = request
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("tool");
            let id = request
                .get("toolCallId")
                .and_then(Value::as_str)
                .unwrap_or("");
            let args = request.get("arguments").unwrap_or(&Value::Null);
            // Arguments are an object, or (older logs) its JSON text.
            let args = match args {
                Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| args.clone()),
                other => other.clone(),
            };
            let raw = request.to_string();
            let mut draft = self
                .state
                .tools
                .call(ts, name, id, &args, raw, self.self_tools);
            draft.model.clone_from(&model);
            drafts.push(draft);
        }
    }

    fn result(&mut self, data: &Value, ts: Option<i64>, raw: &str) -> Draft {
        let success = data.get("success").and_then(Value::as_bool).unwrap_or(true);
        let text = data
            .pointer("/result/content")
            .and_then(Value::as_str)
            .or_else(|| data.pointer("/error/message").and_then(Value::as_str))
            .unwrap_or("")
            .to_owned();
        let id = data.get("toolCallId").and_then(Value::as_str).unwrap_or("");
        let mut draft = self.state.tools.result(ts, id, text, raw.to_owned());
        draft.is_error = !success;
        let structured = data
            .pointer("/shellExecution/exitCode")
            .and_then(Value::as_i64)
            .and_then(|c| i32::try_from(c).ok());
        draft.exit_code = structured.or_else(|| exited_with(&draft.text)).or_else(|| {
            matches!(draft.tool_name.as_str(), "bash" | "powershell")
                .then(|| exit_code_in_text(&draft.text))
                .flatten()
        });
        draft
    }
}

/// The trailer Copilot CLI's shell tool ends its output with: `<exited with exit code N>`.
fn exited_with(text: &str) -> Option<i32> {
    let at = text.rfind("<exited with exit code ")?;
    let rest = &text[at + "<exited with exit code ".len()..];
    rest[..rest.find('>')?].trim().parse().ok()
}

// ---- The harness's log format -------------------------------------------------------------

/// Where Copilot CLI keeps its logs and how they are recognised and named.
pub(crate) struct Format;

/// Reads one record of a Copilot CLI log.
pub(crate) fn read(
    state: &mut CopilotState,
    cx: &ReadContext<'_>,
    record: &Value,
    raw: &str,
    out: &mut AdapterOutput,
) {
    Copilot {
        state,
        self_tools: cx.self_tools,
    }
    .read(record, raw, out);
}

impl LogFormat for Format {
    fn default_sources(&self) -> &'static [DefaultSource] {
        &[
            DefaultSource {
                name: "copilot",
                glob: "~/.copilot/session-state/**/*.jsonl",
            },
            DefaultSource {
                name: "copilot-legacy",
                glob: "~/.copilot/history-session-state/session_*.json",
            },
        ]
    }

    fn path_hints(&self) -> &'static [&'static str] {
        &["/.copilot/"]
    }

    fn scan_names(&self) -> &'static [&'static str] {
        &["*.jsonl", "session_*.json"]
    }

    fn is_log_name(&self, path: &Path) -> bool {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        match path.extension().and_then(|e| e.to_str()) {
            Some("jsonl") => true,
            Some("json") => name.starts_with("session_"),
            _ => false,
        }
    }

    fn detect_record(&self, record: &Map<String, Value>) -> bool {
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        record.contains_key("data") && record.contains_key("id") && kind.contains('.')
    }

    /// An older session: `{"sessionId", "chatMessages", "timeline"}`.
    fn detect_document(&self, document: &Value) -> bool {
        document.get("sessionId").is_some()
            && (document.get("chatMessages").is_some() || document.get("timeline").is_some())
    }

    /// `session-state/<session>/events.jsonl`, the older `session-state/<session>.jsonl`, and
    /// before those `history-session-state/session_<session>_<ms>.json`.
    fn identity_from_name(&self, path: &Path) -> Option<Identity> {
        let stem = stem(path)?;
        let parent = dir_name(path, 1)?;
        let legacy = stem
            .strip_prefix("session_")
            .and_then(|rest| rest.rsplit_once('_'))
            .filter(|(_, ms)| ms.bytes().all(|b| b.is_ascii_digit()))
            .map(|(id, _)| id);
        if stem == "events" && is_uuid(parent) {
            Some(Identity::main(parent))
        } else if let Some(id) = legacy.filter(|id| is_uuid(id)) {
            Some(Identity::main(id))
        } else {
            is_uuid(stem).then(|| Identity::main(stem))
        }
    }

    /// A rendered older session's header, or `session.start`.
    fn identity_from_record(&self, record: &Map<String, Value>) -> Option<Identity> {
        id_text(record.get("sessionId"))
            .filter(|_| record.get("record").is_some())
            .or_else(|| {
                id_text(record.get("data").and_then(|d| d.get("sessionId")))
                    .filter(|_| record.get("type").and_then(Value::as_str) == Some("session.start"))
            })
            .map(|id| Identity::main(&id))
    }

    fn is_rendered(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "json")
    }

    fn render(&self, path: &Path) -> io::Result<Vec<u8>> {
        render_legacy(&super::rendered::read_source(path)?)
    }

    /// A session its event log imported.
    fn superseded(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "json")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_the_exit_trailer_is_read() {
        assert_eq!(
            exited_with("FAILED\n<exited with exit code 101>"),
            Some(101)
        );
        assert_eq!(exited_with("ok"), None);
    }
}
