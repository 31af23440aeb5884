//! Qwen Code chats (`~/.qwen/projects/<project>/chats/<session>.jsonl`, and the whole-file
//! `~/.qwen/tmp/<project>/chats/session-*.json` of versions before 0.4) rendered as they stand,
//! and normalised into draft events.
//!
//! A JSON Lines chat is a tree: each record names its parent (`parentUuid`), and the
//! conversation is the path from the last record back to the root. A rewind re-roots the tail,
//! leaving the rewound records on a dead branch; records sharing a `uuid` are fragments of one.
//! The rendering is that path, fragments merged, after a header with the session's id, project
//! and latest title. A turn starts at a prompt the user typed (a `user` record without a
//! subtype); it ends at an answer without tool calls, a cancelled tool or a failed request.

use super::identity::{Identity, dir_name, id_text, is_uuid, stem};
use super::{DefaultSource, LogFormat, ReadContext};
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::adapter::{AdapterOutput, ToolNames};
use super::draft::{Draft, Ending, SelfTools, exit_code_in_text, parse_ts};
use super::gemini::{
    Chat, Gemini, GeminiState, as_parts, display_text, function_call, is_shell, is_thought,
    parts_text, response_text,
};
use super::rendered::{Rendering, invalid, json_lines};
use crate::vocab::EventType;

/// System records that are not part of the conversation: never its last record.
const OFF_CONVERSATION: &[&str] = &[
    "session_artifact_event",
    "session_artifact_snapshot",
    "session_sources_snapshot",
];

/// Renders a chat (JSON Lines, or a whole-file JSON session) at `path`.
pub(crate) fn render(bytes: &[u8], path: &Path) -> io::Result<Vec<u8>> {
    if path.extension().is_some_and(|e| e == "json") {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| invalid(format!("not valid JSON: {e}")))?;
        let Value::Object(record) = value else {
            return Err(invalid("not a Qwen Code session"));
        };
        let mut chat = Chat::default();
        chat.header(record);
        if !chat.has_session() {
            return Err(invalid("not a Qwen Code session (no sessionId)"));
        }
        return Ok(chat.render(None, &[]));
    }
    let mut records: Vec<Map<String, Value>> = Vec::new();
    let mut by_uuid: HashMap<String, usize> = HashMap::new();
    let mut leaf = None;
    let mut header = Map::new();
    let (lines, damaged) = json_lines(bytes);
    for record in lines {
        let Some(uuid) = record
            .get("uuid")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            continue;
        };
        if header.is_empty() {
            for key in ["sessionId", "cwd", "version", "gitBranch"] {
                if let Some(value) = record.get(key) {
                    header.insert(key.to_owned(), value.clone());
                }
            }
        }
        let subtype = record.get("subtype").and_then(Value::as_str).unwrap_or("");
        if subtype == "custom_title"
            && let Some(title) = record
                .get("systemPayload")
                .and_then(|p| p.get("customTitle"))
        {
            header.insert("title".into(), title.clone());
        }
        let conversation =
            !OFF_CONVERSATION.contains(&subtype) && !subtype.starts_with("managed_session");
        let at = match by_uuid.get(&uuid) {
            Some(&at) => {
                merge_fragment(&mut records[at], record);
                at
            }
            None => {
                by_uuid.insert(uuid, records.len());
                records.push(record);
                records.len() - 1
            }
        };
        if conversation {
            leaf = Some(at);
        }
    }
    if !header.contains_key("sessionId") {
        return Err(invalid("not a Qwen Code session (no sessionId)"));
    }
    // The conversation: from the last record back to its root.
    let mut chain = Vec::new();
    let mut seen = HashSet::new();
    let mut at = leaf;
    while let Some(index) = at {
        if !seen.insert(index) {
            break;
        }
        chain.push(index);
        at = records[index]
            .get("parentUuid")
            .and_then(Value::as_str)
            .and_then(|parent| by_uuid.get(parent).copied());
    }
    chain.reverse();
    let mut out = Rendering::default();
    out.push("session", header);
    out.push_damaged(&damaged);
    // Each record is on the chain once (the walk stops at a repeat).
    for index in chain {
        out.push("entry", std::mem::take(&mut records[index]));
    }
    Ok(out.into_bytes())
}

/// Adds a later fragment of a record: parts appended, usage and time the latest.
fn merge_fragment(first: &mut Map<String, Value>, later: Map<String, Value>) {
    if let Some(Value::Array(more)) = later.get("message").and_then(|m| m.get("parts"))
        && let Some(Value::Array(parts)) = first.get_mut("message").and_then(|m| m.get_mut("parts"))
    {
        parts.extend(more.iter().cloned());
    }
    if let Some(usage) = later.get("usageMetadata") {
        first.insert("usageMetadata".into(), usage.clone());
    }
    let later_ts = later.get("timestamp").and_then(Value::as_str);
    let first_ts = first.get("timestamp").and_then(Value::as_str);
    if let Some(ts) = later_ts
        && first_ts.is_none_or(|f| ts > f)
    {
        first.insert("timestamp".into(), Value::String(ts.to_owned()));
    }
}

/// Adapter state carried across runs in the checkpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct QwenState {
    tools: ToolNames,
    /// Whole-file sessions have Gemini CLI's shape.
    whole_file: GeminiState,
}

pub(crate) struct Qwen<'a> {
    pub state: &'a mut QwenState,
    pub self_tools: &'a SelfTools,
}

impl Qwen<'_> {
    /// Normalises one rendered record.
    pub(crate) fn read(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        match record.get("record").and_then(Value::as_str) {
            Some("session") => {
                if let Some(cwd) = record.get("cwd").and_then(Value::as_str) {
                    out.cwd = Some(cwd.to_owned());
                }
                if let Some(title) = record.get("title").and_then(Value::as_str) {
                    out.title = Some(title.to_owned());
                }
            }
            Some("message") => {
                Gemini {
                    state: &mut self.state.whole_file,
                    self_tools: self.self_tools,
                }
                .read(record, raw, out);
            }
            _ => self.entry(record, raw, &mut out.drafts),
        }
    }

    fn entry(&mut self, record: &Value, raw: &str, drafts: &mut Vec<Draft>) {
        let ts = parse_ts(record.get("timestamp"));
        let parts = record
            .pointer("/message/parts")
            .map(as_parts)
            .unwrap_or_default();
        let subtype = record.get("subtype").and_then(Value::as_str).unwrap_or("");
        let payload = record.get("systemPayload").unwrap_or(&Value::Null);
        let sidechain = record.get("isSidechain").and_then(Value::as_bool) == Some(true);
        let mut made = Vec::new();
        match record.get("type").and_then(Value::as_str).unwrap_or("") {
            "user" => {
                let text = payload
                    .get("displayText")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .filter(|t| !t.trim().is_empty())
                    .unwrap_or_else(|| parts_text(&Value::Array(parts.to_vec()), false));
                let mut draft;
                if subtype == "notification" {
                    draft = Draft::bookkeeping(ts, text, raw.to_owned());
                } else {
                    draft = Draft::new(EventType::UserInput, ts, text, raw.to_owned());
                    // Typed while tools ran, scheduled or voiced: part of the turn under way.
                    draft.starts_turn = subtype.is_empty();
                }
                made.push(draft);
            }
            "assistant" => self.answer(record, &parts, ts, raw, &mut made),
            "tool_result" => self.result(record, &parts, ts, &mut made),
            "system" => made.extend(system(subtype, payload, ts, raw)),
            _ => made.push(Draft::new(
                EventType::Unknown,
                ts,
                String::new(),
                raw.to_owned(),
            )),
        }
        for mut draft in made {
            if sidechain {
                draft.mark_sidechain();
            }
            drafts.push(draft);
        }
    }

    fn answer(
        &mut self,
        record: &Value,
        parts: &[Value],
        ts: Option<i64>,
        raw: &str,
        drafts: &mut Vec<Draft>,
    ) {
        let model = record
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let calls: Vec<&Value> = parts.iter().filter_map(|p| p.get("functionCall")).collect();
        for part in parts.iter().filter(|p| is_thought(p)) {
            let text = part.get("text").and_then(Value::as_str).unwrap_or("");
            let mut draft = Draft::new(EventType::Reasoning, ts, text.to_owned(), part.to_string());
            draft.model.clone_from(&model);
            drafts.push(draft);
        }
        let text = parts_text(&Value::Array(parts.to_vec()), false);
        if !text.trim().is_empty() {
            let mut draft = Draft::new(EventType::AssistantResponse, ts, text, raw.to_owned());
            draft.model.clone_from(&model);
            draft.commentary = !calls.is_empty();
            draft.may_end_turn = calls.is_empty();
            drafts.push(draft);
        }
        for call in calls {
            let raw = call.to_string();
            let draft = function_call(
                &mut self.state.tools,
                call,
                ts,
                &model,
                raw,
                self.self_tools,
            );
            drafts.push(draft);
        }
    }

    fn result(
        &mut self,
        record: &Value,
        parts: &[Value],
        ts: Option<i64>,
        drafts: &mut Vec<Draft>,
    ) {
        let info = record.get("toolCallResult").unwrap_or(&Value::Null);
        let status = info.get("status").and_then(Value::as_str).unwrap_or("");
        let display = info.get("resultDisplay").filter(|d| !d.is_null());
        for response in parts.iter().filter_map(|p| p.get("functionResponse")) {
            let id = response
                .get("id")
                .and_then(Value::as_str)
                .or_else(|| info.get("callId").and_then(Value::as_str))
                .unwrap_or("");
            let mut text = response_text(response.get("response"));
            if text.is_empty()
                && let Some(display) = display
            {
                text = display_text(display);
            }
            let raw = serde_json::json!({"functionResponse": response, "toolCallResult": info});
            let mut draft = self.state.tools.result(ts, id, text, raw.to_string());
            draft.is_error = status == "error" || response.pointer("/response/error").is_some();
            if status == "cancelled" {
                draft.ending = Some(Ending::Interrupted);
            }
            let shell =
                display.filter(|d| d.get("type").and_then(Value::as_str) == Some("shell_result"));
            if let Some(code) = shell
                .and_then(|d| d.get("exitCode"))
                .and_then(Value::as_i64)
            {
                draft.exit_code = i32::try_from(code).ok();
            } else if is_shell(&draft.tool_name) {
                draft.exit_code = exit_code_in_text(&draft.text);
            }
            drafts.push(draft);
        }
    }
}

/// A system record: compaction, a command, a failed request; other bookkeeping kept as such.
fn system(subtype: &str, payload: &Value, ts: Option<i64>, raw: &str) -> Option<Draft> {
    let text_of = |key: &str| payload.get(key).and_then(Value::as_str).unwrap_or("");
    let mut draft = match subtype {
        "chat_compression" => {
            let history = payload
                .get("compressedHistory")
                .and_then(Value::as_array)
                .map(|contents| {
                    contents
                        .iter()
                        .filter_map(|c| c.get("parts"))
                        .map(|p| parts_text(p, false))
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default();
            let info = payload.get("info").unwrap_or(&Value::Null);
            let tokens = |k: &str| info.get(k).and_then(Value::as_i64).unwrap_or(0);
            let text = format!(
                "context compressed from {} to {} tokens\n{history}",
                tokens("originalTokenCount"),
                tokens("newTokenCount")
            );
            return Some(Draft::new(EventType::Compaction, ts, text, raw.to_owned()));
        }
        "ui_telemetry" => {
            let event = payload.get("uiEvent").unwrap_or(&Value::Null);
            if event.get("event.name").and_then(Value::as_str) != Some("qwen-code.api_error") {
                // Per-request telemetry: not the conversation.
                return None;
            }
            let message = event
                .get("error_message")
                .or_else(|| event.get("error"))
                .and_then(Value::as_str)
                .unwrap_or("API error");
            let mut draft = Draft::new(EventType::Runtime, ts, message.to_owned(), raw.to_owned());
            draft.is_error = true;
            draft.ending = Some(Ending::Failed);
            return Some(draft);
        }
        "turn_result" => {
            let ending = match text_of("state") {
                "cancelled" => Ending::Interrupted,
                "error" => Ending::Failed,
                _ => return None,
            };
            let text = payload
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or(text_of("state"));
            let mut draft = Draft::new(EventType::Runtime, ts, text.to_owned(), raw.to_owned());
            draft.is_error = ending == Ending::Failed;
            draft.ending = Some(ending);
            return Some(draft);
        }
        // The title is the header's; a rewind is the tree's shape.
        "custom_title" | "rewind" => return None,
        "slash_command" => {
            let mut lines = vec![text_of("rawCommand").to_owned()];
            for item in payload
                .get("outputHistoryItems")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(text) = item.get("text").and_then(Value::as_str) {
                    lines.push(text.to_owned());
                }
            }
            Draft::new(EventType::System, ts, lines.join("\n"), raw.to_owned())
        }
        "at_command" => {
            let files: Vec<&str> = payload
                .get("filesRead")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            Draft::new(
                EventType::System,
                ts,
                format!("read {}", files.join(", ")),
                raw.to_owned(),
            )
        }
        other => {
            let detail = ["displayText", "message"]
                .iter()
                .find_map(|k| payload.get(*k).and_then(Value::as_str));
            let name = other.replace('_', " ");
            let text = detail.map_or(name.clone(), |d| format!("{name}: {d}"));
            Draft::new(EventType::System, ts, text, raw.to_owned())
        }
    };
    draft.bookkeeping = true;
    Some(draft)
}

// ---- The harness's log format -------------------------------------------------------------

/// Where Qwen Code keeps its logs and how they are recognised and named.
pub(crate) struct Format;

/// Reads one record of a Qwen Code log.
pub(crate) fn read(
    state: &mut QwenState,
    cx: &ReadContext<'_>,
    record: &Value,
    raw: &str,
    out: &mut AdapterOutput,
) {
    Qwen {
        state,
        self_tools: cx.self_tools,
    }
    .read(record, raw, out);
}

impl LogFormat for Format {
    fn default_sources(&self) -> &'static [DefaultSource] {
        &[
            DefaultSource {
                name: "qwen",
                glob: "~/.qwen/projects/*/chats/*.jsonl",
            },
            DefaultSource {
                name: "qwen-legacy",
                glob: "~/.qwen/tmp/*/chats/session-*.json",
            },
        ]
    }

    fn path_hints(&self) -> &'static [&'static str] {
        &["/.qwen/"]
    }

    fn scan_names(&self) -> &'static [&'static str] {
        &["*.jsonl", "session-*.json"]
    }

    fn is_log_name(&self, path: &Path) -> bool {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        path.extension()
            .is_some_and(|e| e == "json" || e == "jsonl")
            && ![".meta.json", ".worktree.json", ".pr.json", ".ledger.jsonl"]
                .iter()
                .any(|sidecar| name.ends_with(sidecar))
    }

    /// Its records hold model-style `parts` where Claude Code's hold `content`.
    fn detect_record(&self, record: &Map<String, Value>) -> bool {
        let message = record.get("message").filter(|m| m.is_object());
        record.contains_key("uuid")
            && (record.contains_key("systemPayload")
                || message.is_some_and(|m| m.get("parts").is_some()))
    }

    fn detect_document(&self, document: &Value) -> bool {
        document.get("sessionId").is_some()
            && document.get("messages").is_some()
            && super::gemini::holds_qwen_messages(document)
    }

    /// `chats/<session>.jsonl`, `subagents/<parent session>/agent-<id>.jsonl`.
    fn identity_from_name(&self, path: &Path) -> Option<Identity> {
        let stem = stem(path)?;
        if dir_name(path, 2)? == "subagents" {
            return Some(Identity::child(format!("{}/{stem}", dir_name(path, 1)?)));
        }
        is_uuid(stem).then(|| Identity::main(stem))
    }

    fn identity_from_record(&self, record: &Map<String, Value>) -> Option<Identity> {
        id_text(record.get("sessionId")).map(|id| Identity::main(&id))
    }

    fn is_rendered(&self, _path: &Path) -> bool {
        true
    }

    fn render(&self, path: &Path) -> io::Result<Vec<u8>> {
        render(&super::rendered::read_source(path)?, path)
    }

    fn superseded(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "json")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rendered(lines: &[Value]) -> Vec<Value> {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        render(text.as_bytes(), Path::new("s.jsonl"))
            .unwrap()
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    }

    fn record(uuid: &str, parent: Option<&str>, kind: &str, text: &str) -> Value {
        json!({"uuid": uuid, "parentUuid": parent, "sessionId": "s", "type": kind,
               "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w",
               "message": {"role": "user", "parts": [{"text": text}]}})
    }

    #[test]
    fn test_the_rendering_follows_the_live_branch_and_merges_fragments() {
        let records = rendered(&[
            record("a", None, "user", "first"),
            record("b", Some("a"), "assistant", "one"),
            record("b", Some("a"), "assistant", " more"),
            record("c", Some("b"), "user", "rewound prompt"),
            json!({"uuid": "r", "parentUuid": "b", "sessionId": "s", "type": "system", "subtype": "rewind",
                   "systemPayload": {"truncatedCount": 1}}),
            record("d", Some("r"), "user", "second"),
            json!({"uuid": "t", "parentUuid": "d", "sessionId": "s", "type": "system", "subtype": "custom_title",
                   "systemPayload": {"customTitle": "Dry run flag"}}),
        ]);
        assert_eq!(records[0]["title"], "Dry run flag");
        assert_eq!(records[0]["cwd"], "/w");
        let uuids: Vec<&str> = records[1..]
            .iter()
            .map(|r| r["uuid"].as_str().unwrap())
            .collect();
        assert_eq!(uuids, ["a", "b", "r", "d", "t"]);
        assert_eq!(records[2]["message"]["parts"].as_array().unwrap().len(), 2);
    }
}
