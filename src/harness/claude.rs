//! Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`) normalised into draft
//! events, one per content block.
//!
//! A turn starts at a user record typed by the user: not a tool result, not an `isMeta` caveat,
//! not a compaction summary, not a sub-agent (`isSidechain`) prompt, not an interruption marker.
//! A turn ends at an assistant message with a final stop reason, at an interruption marker, or
//! at an API-error record. Sub-agent files (`…/subagents/agent-*.jsonl`) are sessions of their
//! own, in which the sub-agent's prompts do start turns.

use std::path::Path;

use serde_json::Map;

use super::identity::{Identity, dir_name, id_text, is_uuid, stem};
use super::{DefaultSource, LogFormat, ReadContext};
use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::adapter::{AdapterOutput, ToolNames};
use super::draft::{Draft, Ending, SelfTools, content_text, exit_code_in_text, parse_ts};
use crate::vocab::EventType;

/// User text that is the harness talking, not the user (including local slash commands such as
/// `/model`, which never reach the model).
const HARNESS_OUTPUT_PREFIXES: &[&str] = &[
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<system-reminder>",
];

/// Context the harness injects into a user message ahead of what the person typed: background
/// task notifications and the IDE extensions' open file, selection and diagnostics. It stays
/// searchable as its own event; it never starts a turn or titles a session.
const INJECTED_ELEMENTS: &[&str] = &[
    "task-notification",
    "ide_opened_file",
    "ide_selection",
    "ide_diagnostics",
    "user-prompt-submit-hook",
];

/// Most summaries of other sessions' messages held while waiting for their message to appear.
const PENDING_SUMMARIES: usize = 64;

/// Stop reasons that end the agent's turn (a final answer or another stop condition).
const FINAL_STOP_REASONS: &[&str] = &["end_turn", "stop_sequence", "max_tokens", "refusal"];

/// Adapter state carried across runs in the checkpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ClaudeState {
    model: String,
    tools: ToolNames,
    /// The log records stop reasons (versions before about 2.1.3 record none): then only they
    /// end a turn; otherwise an answer followed by nothing but bookkeeping does.
    #[serde(default)]
    stop_reasons: bool,
    /// `summary` records whose message (`leafUuid`) has not been seen in this log yet: a
    /// summary titles this session only once its message turns up here, since Claude Code also
    /// writes other sessions' summaries at the top of a log.
    #[serde(default)]
    pending_summaries: Vec<(String, String)>,
    /// The latest message uuids seen, for a summary written after its message.
    #[serde(default)]
    recent_uuids: std::collections::VecDeque<String>,
}

pub(crate) struct Claude<'a> {
    pub state: &'a mut ClaudeState,
    pub self_tools: &'a SelfTools,
    /// This file is a sub-agent's own transcript.
    pub subagent_file: bool,
}

impl Claude<'_> {
    /// Normalises one record.
    pub(crate) fn read(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        let ts = parse_ts(record.get("timestamp"));
        if let Some(cwd) = record.get("cwd").and_then(Value::as_str) {
            out.cwd = Some(cwd.to_owned());
        }
        let sidechain = record
            .get("isSidechain")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            && !self.subagent_file;
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        if let Some(uuid) = record.get("uuid").and_then(Value::as_str) {
            self.saw_message(uuid, out);
        }
        let mut drafts = Vec::new();
        match kind {
            "user" => self.user(record, ts, raw, &mut drafts),
            "assistant" => self.assistant(record, ts, raw, &mut drafts),
            "system" => {
                let subtype = record.get("subtype").and_then(Value::as_str).unwrap_or("");
                let text = record.get("content").map(content_text).unwrap_or_default();
                let event_type = if subtype == "compact_boundary" {
                    EventType::Compaction
                } else {
                    EventType::System
                };
                let text = if text.is_empty() {
                    subtype.replace('_', " ")
                } else {
                    text
                };
                drafts.push(Draft::new(event_type, ts, text, raw.to_owned()));
            }
            "summary" => {
                if let Some(summary) = record.get("summary").and_then(Value::as_str) {
                    let leaf = record.get("leafUuid").and_then(Value::as_str).unwrap_or("");
                    self.summary(leaf, summary, out);
                }
            }
            "custom-title" | "ai-title" => {
                let title = ["customTitle", "title", "aiTitle"]
                    .iter()
                    .find_map(|k| record.get(*k).and_then(Value::as_str));
                if let Some(title) = title {
                    out.title = Some(title.to_owned());
                }
            }
            // Bookkeeping the harness writes around the conversation: kept, searchable as
            // what it is, never a prompt or an answer.
            "attachment" if queued_prompt(record).is_some() => {
                // A prompt typed while the agent was busy, handed to it mid-turn.
                let text = queued_prompt(record).unwrap_or_default();
                drafts.push(Draft::new(EventType::UserInput, ts, text, raw.to_owned()));
            }
            "attachment" if queued_by_harness(record).is_some() => {
                // Queued by the harness (a background task's notification): searchable as
                // what it says, never a prompt.
                let text = queued_by_harness(record).unwrap_or_default();
                drafts.push(Draft::new(EventType::System, ts, text, raw.to_owned()));
            }
            "progress"
            | "file-history-snapshot"
            | "attachment"
            | "last-prompt"
            | "mode"
            | "permission-mode"
            | "worktree-state"
            | "pr-link"
            | "bridge-session" => {
                let detail = ["permissionMode", "mode"]
                    .iter()
                    .find_map(|k| record.get(*k).and_then(Value::as_str));
                let text = match detail {
                    Some(detail) => format!("{}: {detail}", kind.replace('-', " ")),
                    None => kind.replace('-', " "),
                };
                drafts.push(Draft::new(EventType::System, ts, text, raw.to_owned()));
            }
            "queue-operation" => {
                // The prompt itself is indexed where it reaches the agent: a user record after
                // `dequeue`, or the `queued_command` attachment when it was absorbed mid-turn
                // (`remove`, reason `absorbed_mid_turn`); here only what happened to the queue.
                let operation = record
                    .get("operation")
                    .and_then(Value::as_str)
                    .unwrap_or("change");
                let text = match record.get("reason").and_then(Value::as_str) {
                    Some(reason) => format!("prompt queue: {operation} ({reason})"),
                    None => format!("prompt queue: {operation}"),
                };
                drafts.push(Draft::new(EventType::Runtime, ts, text, raw.to_owned()));
            }
            _ => drafts.push(Draft::new(
                EventType::Unknown,
                ts,
                String::new(),
                raw.to_owned(),
            )),
        }
        for mut draft in drafts {
            draft.bookkeeping = matches!(draft.event_type, EventType::System | EventType::Runtime)
                && draft.ending.is_none();
            if sidechain {
                draft.mark_sidechain();
            }
            out.drafts.push(draft);
        }
    }

    /// A message of this log: a summary waiting for it now titles the session.
    fn saw_message(&mut self, uuid: &str, out: &mut AdapterOutput) {
        let state = &mut self.state;
        if let Some(at) = state
            .pending_summaries
            .iter()
            .position(|(leaf, _)| leaf == uuid)
        {
            let (_, summary) = state.pending_summaries.remove(at);
            out.title = Some(summary.clone());
            out.summary = Some(summary);
        }
        if state.recent_uuids.len() == PENDING_SUMMARIES {
            state.recent_uuids.pop_front();
        }
        state.recent_uuids.push_back(uuid.to_owned());
    }

    /// A `summary` record: it titles this session when its message is (or turns up) here.
    fn summary(&mut self, leaf: &str, summary: &str, out: &mut AdapterOutput) {
        let state = &mut self.state;
        if state.recent_uuids.iter().any(|u| u == leaf) {
            out.title = Some(summary.to_owned());
            out.summary = Some(summary.to_owned());
        } else if !leaf.is_empty() {
            if state.pending_summaries.len() == PENDING_SUMMARIES {
                state.pending_summaries.remove(0);
            }
            state
                .pending_summaries
                .push((leaf.to_owned(), summary.to_owned()));
        }
    }

    fn user(&mut self, record: &Value, ts: Option<i64>, raw: &str, drafts: &mut Vec<Draft>) {
        let flag = |k: &str| record.get(k).and_then(Value::as_bool).unwrap_or(false);
        // Written by the harness on the person's behalf (a background task's notification).
        let injected_record = record
            .get("origin")
            .and_then(|o| o.get("kind"))
            .and_then(Value::as_str)
            .is_some_and(|kind| kind != "human" && kind != "user");
        let content = record
            .get("message")
            .and_then(|m| m.get("content"))
            .unwrap_or(&Value::Null);
        let blocks = content_blocks(content);
        let mut narrowed = Narrowed::new(record, blocks.len());
        for block in blocks.iter() {
            let raw = narrowed.raw(raw, block);
            match block.get("type").and_then(Value::as_str).unwrap_or("") {
                "tool_result" => {
                    let call_id = block
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let text = block.get("content").map(content_text).unwrap_or_default();
                    let mut draft = Draft::new(EventType::ToolResponse, ts, text, raw);
                    draft.is_error = block
                        .get("is_error")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    self.state.tools.name_result(&mut draft, call_id);
                    // Only shell tools' results carry a process exit status.
                    if matches!(
                        draft.tool_name.as_str(),
                        "Bash" | "BashOutput" | "KillShell"
                    ) {
                        draft.exit_code = exit_code_in_text(&draft.text).or(if draft.is_error {
                            None
                        } else {
                            Some(0)
                        });
                    }
                    drafts.push(draft);
                }
                "text" => {
                    let text = block
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let head = text.trim_start();
                    let mut draft;
                    if head.starts_with("[Request interrupted by user") {
                        draft = Draft::new(EventType::Runtime, ts, text, raw);
                        draft.ending = Some(Ending::Interrupted);
                    } else if flag("isCompactSummary") {
                        draft = Draft::new(EventType::Compaction, ts, text, raw);
                    } else if injected_record
                        || flag("isMeta")
                        || HARNESS_OUTPUT_PREFIXES.iter().any(|p| head.starts_with(p))
                    {
                        draft = Draft::new(EventType::System, ts, text, raw);
                    } else {
                        let (injected, typed) = split_injected(&text);
                        if !injected.is_empty() {
                            let mut context =
                                Draft::new(EventType::System, ts, injected.to_owned(), raw.clone());
                            // The context of the prompt that follows: in that prompt's turn.
                            context.opens_turn = !typed.is_empty();
                            drafts.push(context);
                        }
                        if typed.is_empty() {
                            continue;
                        }
                        draft = Draft::new(EventType::UserInput, ts, typed.to_owned(), raw);
                        draft.starts_turn = true;
                    }
                    drafts.push(draft);
                }
                other => {
                    // Images and documents the user attached are part of their input.
                    let mut draft = Draft::new(EventType::UserInput, ts, format!("[{other}]"), raw);
                    draft.starts_turn = !flag("isMeta");
                    drafts.push(draft);
                }
            }
        }
    }

    fn assistant(&mut self, record: &Value, ts: Option<i64>, raw: &str, drafts: &mut Vec<Draft>) {
        let message = record.get("message").unwrap_or(&Value::Null);
        if let Some(model) = message.get("model").and_then(Value::as_str)
            && model != "<synthetic>"
        {
            self.state.model = model.to_owned();
        }
        let model = self.state.model.clone();
        let content = message.get("content").unwrap_or(&Value::Null);
        if record
            .get("isApiErrorMessage")
            .and_then(Value::as_bool)
            .unwrap_or(false)
        {
            let mut draft = Draft::new(
                EventType::Runtime,
                ts,
                content_text(content),
                raw.to_owned(),
            );
            draft.is_error = true;
            draft.ending = Some(Ending::Failed);
            drafts.push(draft);
            return;
        }
        let blocks = content_blocks(content);
        let mut narrowed = Narrowed::new(record, blocks.len());
        let first = drafts.len();
        for block in blocks.iter() {
            let raw = narrowed.raw(raw, block);
            let block_type = block.get("type").and_then(Value::as_str).unwrap_or("");
            let mut draft = match block_type {
                "text" => Draft::new(
                    EventType::AssistantResponse,
                    ts,
                    block
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    raw,
                ),
                "thinking" => Draft::new(
                    EventType::Reasoning,
                    ts,
                    block
                        .get("thinking")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    raw,
                ),
                "redacted_thinking" => Draft::new(EventType::Reasoning, ts, String::new(), raw),
                "tool_use" | "server_tool_use" | "mcp_tool_use" => {
                    let name = block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let input = block.get("input").unwrap_or(&Value::Null);
                    let call_id = block
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    self.state
                        .tools
                        .call(ts, &name, &call_id, input, raw, self.self_tools)
                }
                "web_search_tool_result" | "mcp_tool_result" | "web_fetch_tool_result" => {
                    let call_id = block
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let text = search_result_text(block.get("content").unwrap_or(&Value::Null));
                    self.state.tools.result(ts, &call_id, text, raw)
                }
                _ => Draft::new(EventType::Unknown, ts, String::new(), raw),
            };
            if draft.event_type != EventType::ToolCall
                && draft.event_type != EventType::ToolResponse
            {
                draft.model = model.clone();
            }
            drafts.push(draft);
        }
        let stop = message
            .get("stop_reason")
            .and_then(Value::as_str)
            .unwrap_or("");
        self.state.stop_reasons |= !stop.is_empty();
        if FINAL_STOP_REASONS.contains(&stop) && drafts.len() > first {
            drafts.last_mut().expect("checked above").ending = Some(Ending::Completed);
        }
        if !self.state.stop_reasons {
            for draft in &mut drafts[first..] {
                draft.may_end_turn = draft.event_type == EventType::AssistantResponse;
            }
        }
    }
}

/// The prompt of a `queued_command` attachment (a prompt typed while the agent was busy). What
/// the harness queued itself (`commandMode` `task-notification`: a background task's or a
/// monitor's report) is not one: only the modes a person types in are.
fn queued_prompt(record: &Value) -> Option<String> {
    let attachment = record.get("attachment")?;
    if attachment.get("type").and_then(Value::as_str) != Some("queued_command") {
        return None;
    }
    let typed = attachment
        .get("commandMode")
        .and_then(Value::as_str)
        .is_none_or(|mode| TYPED_COMMAND_MODES.contains(&mode));
    if !typed {
        return None;
    }
    let prompt = ["prompt", "content"]
        .iter()
        .find_map(|k| attachment.get(*k))
        .map(content_text)?;
    (!prompt.trim().is_empty()).then_some(prompt)
}

/// `queued_command` modes a person types in: a prompt, a `!` shell command.
const TYPED_COMMAND_MODES: &[&str] = &["prompt", "bash"];

/// The text of a `queued_command` attachment the harness queued itself (not a typed mode).
fn queued_by_harness(record: &Value) -> Option<String> {
    let attachment = record.get("attachment")?;
    let mode = attachment.get("commandMode").and_then(Value::as_str)?;
    if attachment.get("type").and_then(Value::as_str) != Some("queued_command")
        || TYPED_COMMAND_MODES.contains(&mode)
    {
        return None;
    }
    let text = ["prompt", "content"]
        .iter()
        .find_map(|k| attachment.get(*k))
        .map(content_text)
        .unwrap_or_default();
    Some(if text.trim().is_empty() {
        mode.replace('-', " ")
    } else {
        text
    })
}

/// Splits the injected context elements at the start of a user text block from what the
/// person typed after them: (injected, typed), both trimmed.
fn split_injected(text: &str) -> (&str, &str) {
    let mut rest = text.trim_start();
    let start = text.len() - rest.len();
    let opening = |rest: &str| {
        INJECTED_ELEMENTS.iter().find(|name| {
            rest.strip_prefix('<')
                .and_then(|r| r.strip_prefix(**name))
                .is_some_and(|r| r.starts_with(['>', ' ']))
        })
    };
    while let Some(name) = opening(rest) {
        let close = format!("</{name}>");
        let Some(end) = rest.find(&close) else {
            // Never closed: all of it is the harness's.
            rest = "";
            break;
        };
        rest = rest[end + close.len()..].trim_start();
    }
    let typed_at = text.len() - rest.len();
    (text[start..typed_at].trim_end(), rest.trim_end())
}

/// A message's content as blocks; a plain string is one text block.
fn content_blocks(content: &Value) -> Cow<'_, [Value]> {
    match content {
        Value::Array(blocks) => Cow::Borrowed(blocks.as_slice()),
        Value::String(s) => Cow::Owned(vec![serde_json::json!({"type": "text", "text": s})]),
        _ => Cow::Borrowed(&[]),
    }
}

/// The raw source of each block's event. A record of several blocks is split: each event keeps
/// the record with `message.content` narrowed to its own block. The record is copied once,
/// without its content, however many blocks it has.
struct Narrowed {
    shell: Option<Value>,
}

impl Narrowed {
    fn new(record: &Value, blocks: usize) -> Self {
        let shell = (blocks > 1).then(|| {
            let mut shell = serde_json::Map::new();
            for (key, value) in record.as_object().into_iter().flatten() {
                let value = match value {
                    Value::Object(message) if key == "message" => Value::Object(
                        message
                            .iter()
                            .map(|(k, v)| {
                                let v = if k == "content" {
                                    Value::Array(Vec::new())
                                } else {
                                    v.clone()
                                };
                                (k.clone(), v)
                            })
                            .collect(),
                    ),
                    other => other.clone(),
                };
                shell.insert(key.clone(), value);
            }
            Value::Object(shell)
        });
        Self { shell }
    }

    fn raw(&mut self, raw: &str, block: &Value) -> String {
        let Some(shell) = &mut self.shell else {
            return raw.to_owned();
        };
        if let Some(content) = shell.get_mut("message").and_then(|m| m.get_mut("content")) {
            *content = Value::Array(vec![block.clone()]);
        }
        shell.to_string()
    }
}

/// Titles, URLs and text of server-side search results.
fn search_result_text(content: &Value) -> String {
    match content {
        Value::Array(items) => items
            .iter()
            .map(|item| {
                let fields: Vec<&str> = ["title", "url", "text"]
                    .iter()
                    .filter_map(|k| item.get(*k).and_then(Value::as_str))
                    .collect();
                fields.join(" ")
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => content_text(other),
    }
}

// ---- The harness's log format -------------------------------------------------------------

/// Where Claude Code keeps its logs and how they are recognised and named.
pub(crate) struct Format;

/// Reads one record of a Claude Code log.
pub(crate) fn read(
    state: &mut ClaudeState,
    cx: &ReadContext<'_>,
    record: &Value,
    raw: &str,
    out: &mut AdapterOutput,
) {
    Claude {
        state,
        self_tools: cx.self_tools,
        subagent_file: cx.subagent_file,
    }
    .read(record, raw, out);
}

impl LogFormat for Format {
    fn default_sources(&self) -> &'static [DefaultSource] {
        &[DefaultSource {
            name: "claude",
            glob: "~/.claude/projects/**/*.jsonl",
        }]
    }

    fn path_hints(&self) -> &'static [&'static str] {
        &["/.claude/"]
    }

    /// Its conversation links, or the records that open its logs.
    fn detect_record(&self, record: &Map<String, Value>) -> bool {
        let has = |key: &str| record.contains_key(key);
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        let linked = has("sessionId")
            && (has("uuid") || has("parentUuid") || matches!(kind, "user" | "assistant"));
        let head = kind == "summary" && has("leafUuid")
            || kind == "file-history-snapshot" && has("snapshot");
        linked || head
    }

    /// `<session uuid>.jsonl` and `<session>/subagents/agent-<id>.jsonl`. A log named by its
    /// session is taken at its word even when its first records name another session: a
    /// resumed session begins with the history of the one it resumes.
    fn identity_from_name(&self, path: &Path) -> Option<Identity> {
        let stem = stem(path)?;
        if dir_name(path, 1) == Some("subagents") {
            let session = dir_name(path, 2)?;
            return Some(Identity::child(format!("{session}/{stem}")));
        }
        is_uuid(stem).then(|| Identity::main(stem))
    }

    /// `sessionId`, and for a sub-agent's log (its records are a side chain with an
    /// `agentId`) the agent within it.
    fn identity_from_record(&self, record: &Map<String, Value>) -> Option<Identity> {
        let session = id_text(record.get("sessionId"))?;
        let sidechain = record.get("isSidechain").and_then(Value::as_bool);
        Some(match id_text(record.get("agentId")) {
            Some(agent) if sidechain == Some(true) => {
                Identity::child(format!("{session}/agent-{agent}"))
            }
            _ => Identity::main(&session),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn test_each_block_keeps_the_record_narrowed_to_it() {
        let record = json!({
            "type": "assistant", "uuid": "u1",
            "message": {"id": "m", "content": [{"type": "text", "text": "a"}, {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}}], "model": "x"},
            "timestamp": "2026-01-01T00:00:00Z"
        });
        let raw = record.to_string();
        let blocks = content_blocks(&record["message"]["content"]);
        let mut narrowed = Narrowed::new(&record, blocks.len());
        for block in blocks.iter() {
            let mut expected = record.clone();
            expected["message"]["content"] = json!([block]);
            assert_eq!(narrowed.raw(&raw, block), expected.to_string());
        }
        let single = json!({"type": "user", "message": {"content": "hi"}});
        let single_raw = single.to_string();
        let blocks = content_blocks(&single["message"]["content"]);
        assert_eq!(blocks.len(), 1);
        assert_eq!(
            Narrowed::new(&single, 1).raw(&single_raw, &blocks[0]),
            single_raw
        );
    }

    /// Each draft's type, whether it starts a turn, and its text.
    fn kinds_and_texts(drafts: &[Draft]) -> Vec<(EventType, bool, &str)> {
        drafts
            .iter()
            .map(|d| (d.event_type, d.starts_turn, d.text.as_str()))
            .collect()
    }

    fn read_all(lines: &[Value], subagent_file: bool) -> (Vec<Draft>, AdapterOutput) {
        let tools = SelfTools::new(&["moraine".into()]);
        let mut claude = Claude {
            state: &mut ClaudeState::default(),
            self_tools: &tools,
            subagent_file,
        };
        let mut out = AdapterOutput::default();
        for line in lines {
            claude.read(line, &line.to_string(), &mut out);
        }
        (std::mem::take(&mut out.drafts), out)
    }

    #[test]
    fn test_turn_starts_and_endings() {
        let (drafts, out) = read_all(
            &[
                json!({"type":"summary","summary":"Fix login bug","leafUuid":"x"}),
                json!({"type":"user","isMeta":true,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"<local-command-caveat>x</local-command-caveat>"}}),
                json!({"type":"user","timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"fix login"}}),
                json!({"type":"assistant","timestamp":"2026-01-01T00:00:02Z","message":{"model":"claude-x","content":[{"type":"thinking","thinking":"hmm"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"npm test"}}],"stop_reason":"tool_use"}}),
                json!({"type":"user","timestamp":"2026-01-01T00:00:03Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Exit code 1\nfail","is_error":true}]}}),
                json!({"type":"user","timestamp":"2026-01-01T00:00:04Z","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}),
                json!({"type":"assistant","uuid":"x","timestamp":"2026-01-01T00:00:05Z","message":{"content":[{"type":"text","text":"Done"}],"stop_reason":"end_turn"}}),
            ],
            false,
        );
        // The summary's message is in this log: it titles the session.
        assert_eq!(out.title.as_deref(), Some("Fix login bug"));
        let summary: Vec<_> = drafts
            .iter()
            .map(|d| (d.event_type, d.starts_turn, d.ending))
            .collect();
        assert_eq!(
            summary,
            [
                (EventType::System, false, None),
                (EventType::UserInput, true, None),
                (EventType::Reasoning, false, None),
                (EventType::ToolCall, false, None),
                (EventType::ToolResponse, false, None),
                (EventType::Runtime, false, Some(Ending::Interrupted)),
                (EventType::AssistantResponse, false, Some(Ending::Completed)),
            ]
        );
        assert_eq!(drafts[4].tool_name, "Bash");
        assert_eq!(drafts[4].exit_code, Some(1));
        assert_eq!(drafts[3].text, r#"Bash(command="npm test")"#);
        // Each event of a multi-block record keeps only its own block.
        let raw: Value = serde_json::from_str(&drafts[3].raw).unwrap();
        assert_eq!(raw["message"]["content"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn test_sidechain_never_starts_or_ends_parent_turns() {
        let lines = [
            json!({"type":"user","isSidechain":true,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"search the repo"}}),
            json!({"type":"assistant","isSidechain":true,"timestamp":"2026-01-01T00:00:02Z","message":{"content":[{"type":"text","text":"found"}],"stop_reason":"end_turn"}}),
        ];
        let (drafts, _) = read_all(&lines, false);
        assert!(
            drafts
                .iter()
                .all(|d| d.sidechain && !d.starts_turn && d.ending.is_none())
        );
        let (drafts, _) = read_all(&lines, true);
        assert!(drafts[0].starts_turn);
        assert_eq!(drafts[1].ending, Some(Ending::Completed));
    }

    #[test]
    fn test_bookkeeping_records_are_system_events_never_prompts() {
        let (drafts, _) = read_all(
            &[
                json!({"type":"permission-mode","permissionMode":"bypassPermissions","timestamp":"2026-01-01T00:00:00Z"}),
                json!({"type":"mode","mode":"plan","timestamp":"2026-01-01T00:00:00Z"}),
                json!({"type":"worktree-state","timestamp":"2026-01-01T00:00:00Z"}),
                json!({"type":"pr-link","timestamp":"2026-01-01T00:00:00Z"}),
                json!({"type":"bridge-session","timestamp":"2026-01-01T00:00:00Z"}),
            ],
            false,
        );
        let seen = kinds_and_texts(&drafts);
        assert_eq!(
            seen,
            [
                (
                    EventType::System,
                    false,
                    "permission mode: bypassPermissions"
                ),
                (EventType::System, false, "mode: plan"),
                (EventType::System, false, "worktree state"),
                (EventType::System, false, "pr link"),
                (EventType::System, false, "bridge session"),
            ]
        );
    }

    #[test]
    fn test_a_summary_titles_only_the_session_whose_message_it_names() {
        let user = |uuid: &str| json!({"type":"user","uuid":uuid,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"fix login"}});
        // Another session's summary at the top of the log: no title from it.
        let (_, out) = read_all(
            &[
                json!({"type":"summary","summary":"Someone else's work","leafUuid":"elsewhere"}),
                user("u1"),
            ],
            false,
        );
        assert_eq!(out.title, None);
        // A summary written after its message.
        let (_, out) = read_all(
            &[
                user("u1"),
                json!({"type":"summary","summary":"Login fixed","leafUuid":"u1"}),
            ],
            false,
        );
        assert_eq!(out.title.as_deref(), Some("Login fixed"));
    }

    #[test]
    fn test_injected_context_is_its_own_event_and_never_a_prompt() {
        let (drafts, _) = read_all(
            &[
                // A background task's notification, written as a user record.
                json!({"type":"user","origin":{"kind":"task-notification"},"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"<task-notification><task-id>b1</task-id><status>completed</status></task-notification>"}}),
                // The IDE extension: the open file as a block of its own, then the prompt.
                json!({"type":"user","timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":[
                    {"type":"text","text":"<ide_opened_file>The user opened the file src/lib.rs in the IDE.</ide_opened_file>"},
                    {"type":"text","text":"why does the parser panic"}]}}),
                // A selection and the prompt in one block.
                json!({"type":"user","timestamp":"2026-01-01T00:00:03Z","message":{"role":"user","content":"<ide_selection>fn parse()</ide_selection>\n\nexplain this"}}),
            ],
            false,
        );
        let seen = kinds_and_texts(&drafts);
        assert_eq!(
            seen,
            [
                (
                    EventType::System,
                    false,
                    "<task-notification><task-id>b1</task-id><status>completed</status></task-notification>"
                ),
                (
                    EventType::System,
                    false,
                    "<ide_opened_file>The user opened the file src/lib.rs in the IDE.</ide_opened_file>"
                ),
                (EventType::UserInput, true, "why does the parser panic"),
                (
                    EventType::System,
                    false,
                    "<ide_selection>fn parse()</ide_selection>"
                ),
                (EventType::UserInput, true, "explain this"),
            ]
        );
        assert_eq!(
            split_injected("<ide_selection>never closed"),
            ("<ide_selection>never closed", "")
        );
        assert_eq!(
            split_injected("plain <ide_selection>x</ide_selection>"),
            ("", "plain <ide_selection>x</ide_selection>")
        );
    }

    #[test]
    fn test_a_queued_prompt_is_user_input_once() {
        let (drafts, _) = read_all(
            &[
                json!({"type":"queue-operation","operation":"enqueue","timestamp":"2026-01-01T00:00:01Z","content":"also update the changelog"}),
                json!({"type":"queue-operation","operation":"remove","reason":"absorbed_mid_turn","timestamp":"2026-01-01T00:00:02Z"}),
                json!({"type":"attachment","timestamp":"2026-01-01T00:00:03Z","attachment":{"type":"queued_command","prompt":"also update the changelog"}}),
                json!({"type":"attachment","timestamp":"2026-01-01T00:00:04Z","attachment":{"type":"edited_text_file","filename":"a.rs"}}),
            ],
            false,
        );
        let seen = kinds_and_texts(&drafts);
        assert_eq!(
            seen,
            [
                (EventType::Runtime, false, "prompt queue: enqueue"),
                (
                    EventType::Runtime,
                    false,
                    "prompt queue: remove (absorbed_mid_turn)"
                ),
                (EventType::UserInput, false, "also update the changelog"),
                (EventType::System, false, "attachment"),
            ]
        );
    }

    #[test]
    fn test_without_stop_reasons_an_answer_may_end_its_turn_and_bookkeeping_does_not_count() {
        let answer = |stop: Value| json!({"type":"assistant","timestamp":"2026-01-01T00:00:02Z","message":{"content":[{"type":"text","text":"Done"}],"stop_reason":stop}});
        let snapshot = json!({"type":"file-history-snapshot","messageId":"m","snapshot":{}});
        let (drafts, _) = read_all(&[answer(Value::Null), snapshot], false);
        assert!(drafts[0].may_end_turn && !drafts[0].bookkeeping);
        assert!(drafts[1].bookkeeping && !drafts[1].may_end_turn);
        // Once a log records stop reasons, only they end turns.
        let (drafts, _) = read_all(&[answer(json!("tool_use")), answer(Value::Null)], false);
        assert!(drafts.iter().all(|d| !d.may_end_turn));
    }
}
