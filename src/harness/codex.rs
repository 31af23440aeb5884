//! Codex CLI rollout files (`~/.codex/sessions/**/rollout-*.jsonl`): records `{timestamp, type,
//! payload}` normalised into draft events.
//!
//! Codex writes most messages twice: a `response_item` and an `event_msg` mirror
//! (`user_message`, `agent_message`, `agent_reasoning`), matched one-to-one by text. The
//! `response_item` is kept (it carries the assistant's `phase` and the whole reasoning item); a
//! mirror that arrives first waits a few records for it, and stands in for it if it never comes. Injected context (environment, AGENTS.md, instructions) arrives as
//! user-role messages but is not user input. `compacted` replays old history in
//! `replacement_history`; only its summary becomes an event, so replays never become turns.

use std::path::Path;

use super::identity::{Identity, id_text, is_uuid, stem};
use super::{DefaultSource, LogFormat, ReadContext};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::adapter::{AdapterOutput, ToolNames};
use super::draft::{
    Draft, Ending, SelfTools, content_text, exit_code_in_text, parse_ts, render_call,
};
use crate::rows::arguments_value;
use crate::vocab::EventType;

/// Prefixes of user-role messages that Codex injects rather than the user typing them.
const INJECTED_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "<permissions instructions>",
    "<developer_instructions>",
    "# AGENTS.md instructions",
    "<user_shell_command>",
    "<turn_aborted>",
];

/// How many kept items are remembered while their mirrors may still arrive.
const ITEM_MEMORY: usize = 64;
/// How many other records a mirror waits for its item before it stands in for it.
const MIRROR_PATIENCE: u32 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum MirrorKind {
    User,
    Assistant,
    Reasoning,
}

/// A mirror that arrived before its item.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Waiting {
    kind: MirrorKind,
    hash: u64,
    draft: Draft,
    /// Records seen since.
    age: u32,
}

/// Adapter state carried across runs in the checkpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct CodexState {
    model: String,
    tools: ToolNames,
    /// Items kept whose mirror has not arrived yet: (kind, text hash).
    items: Vec<(MirrorKind, u64)>,
    waiting: Vec<Waiting>,
    /// A log from before `session_meta` (mid-2025 and the TypeScript CLI): it records no turn
    /// events, so an answer followed by nothing else ends its turn.
    #[serde(default)]
    early: bool,
}

pub(crate) struct Codex<'a> {
    pub state: &'a mut CodexState,
    pub self_tools: &'a SelfTools,
}

impl Codex<'_> {
    /// Normalises one record.
    pub(crate) fn read(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        let ts = parse_ts(record.get("timestamp"));
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        let payload = record.get("payload").unwrap_or(&Value::Null);
        self.age_mirrors(kind, payload, out);
        match kind {
            "session_meta" => {
                if let Some(cwd) = payload.get("cwd").and_then(Value::as_str) {
                    out.cwd = Some(cwd.to_owned());
                }
                let text = format!(
                    "session started in {} ({} {})",
                    str_of(payload, "cwd"),
                    str_of(payload, "originator"),
                    str_of(payload, "cli_version"),
                );
                out.drafts
                    .push(Draft::new(EventType::System, ts, text, raw.to_owned()));
            }
            "turn_context" => {
                if let Some(model) = payload.get("model").and_then(Value::as_str) {
                    self.state.model = model.to_owned();
                }
                let mut draft = Draft::new(
                    EventType::System,
                    ts,
                    format!(
                        "turn context: model {}, cwd {}",
                        str_of(payload, "model"),
                        str_of(payload, "cwd")
                    ),
                    raw.to_owned(),
                );
                draft.model = self.state.model.clone();
                draft.opens_turn = true;
                out.drafts.push(draft);
            }
            "response_item" => self.response_item(payload, ts, raw, out),
            "event_msg" => self.event_msg(payload, ts, raw, out),
            "compacted" => {
                let text = str_of(payload, "message").to_owned();
                out.drafts
                    .push(Draft::new(EventType::Compaction, ts, text, raw.to_owned()));
            }
            // Before session_meta existed, the first line was bare metadata and items had no envelope.
            "" if record.get("id").is_some() && record.get("instructions").is_some() => {
                self.state.early = true;
                out.drafts.push(Draft::new(
                    EventType::System,
                    ts,
                    "session started".into(),
                    raw.to_owned(),
                ));
            }
            "message"
            | "reasoning"
            | "function_call"
            | "function_call_output"
            | "custom_tool_call"
            | "custom_tool_call_output"
            | "local_shell_call"
            | "web_search_call" => self.response_item(record, ts, raw, out),
            "world_state" => out.drafts.push(Draft::new(
                EventType::System,
                ts,
                "world state".into(),
                raw.to_owned(),
            )),
            _ if record.get("record_type").is_some() => {
                let mut draft = Draft::new(EventType::System, ts, String::new(), raw.to_owned());
                draft.bookkeeping = true;
                out.drafts.push(draft);
            }
            _ => out.drafts.push(Draft::new(
                EventType::Unknown,
                ts,
                String::new(),
                raw.to_owned(),
            )),
        }
    }

    fn response_item(&mut self, item: &Value, ts: Option<i64>, raw: &str, out: &mut AdapterOutput) {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "message" => {
                let role = item.get("role").and_then(Value::as_str).unwrap_or("");
                let text = content_text(item.get("content").unwrap_or(&Value::Null));
                match role {
                    "user" if is_injected(&text) => {
                        out.drafts
                            .push(Draft::new(EventType::System, ts, text, raw.to_owned()));
                    }
                    "user" => {
                        let (context, request) = split_ide_context(&text);
                        if !context.is_empty() {
                            let mut draft = Draft::new(
                                EventType::System,
                                ts,
                                context.to_owned(),
                                raw.to_owned(),
                            );
                            // The context of the request that follows: in that request's turn.
                            draft.opens_turn = !request.is_empty();
                            out.drafts.push(draft);
                        }
                        if !request.is_empty() {
                            let request = request.to_owned();
                            self.keep_item(MirrorKind::User, std::slice::from_ref(&request));
                            let mut draft =
                                Draft::new(EventType::UserInput, ts, request, raw.to_owned());
                            draft.starts_turn = true;
                            out.drafts.push(draft);
                        }
                    }
                    "assistant" => {
                        self.keep_item(MirrorKind::Assistant, std::slice::from_ref(&text));
                        let mut draft =
                            Draft::new(EventType::AssistantResponse, ts, text, raw.to_owned());
                        draft.commentary =
                            item.get("phase").and_then(Value::as_str) == Some("commentary");
                        draft.may_end_turn = self.state.early && !draft.commentary;
                        draft.model = self.state.model.clone();
                        out.drafts.push(draft);
                    }
                    _ => out
                        .drafts
                        .push(Draft::new(EventType::System, ts, text, raw.to_owned())),
                }
            }
            "reasoning" => {
                let mut parts: Vec<String> = Vec::new();
                for field in ["summary", "content"] {
                    if let Some(Value::Array(items)) = item.get(field) {
                        parts.extend(
                            items
                                .iter()
                                .filter_map(|p| p.get("text").and_then(Value::as_str))
                                .map(str::to_owned),
                        );
                    }
                }
                let text = parts.join("\n\n");
                self.keep_item(MirrorKind::Reasoning, &parts);
                let mut draft = Draft::new(EventType::Reasoning, ts, text, raw.to_owned());
                draft.model = self.state.model.clone();
                out.drafts.push(draft);
            }
            "function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call" => {
                let name = match kind {
                    "web_search_call" => "web_search".to_owned(),
                    "local_shell_call" => "local_shell".to_owned(),
                    _ => str_of(item, "name").to_owned(),
                };
                let arguments = match kind {
                    "function_call" => arguments_value(str_of(item, "arguments")),
                    "custom_tool_call" => json!({ "input": str_of(item, "input") }),
                    _ => item.get("action").cloned().unwrap_or(Value::Null),
                };
                let call_id = item
                    .get("call_id")
                    .or_else(|| item.get("id"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let text = match (kind, &arguments) {
                    ("custom_tool_call", _) => format!("{name}\n{}", str_of(item, "input")),
                    _ => render_call(&name, &arguments),
                };
                let mut draft = Draft::new(EventType::ToolCall, ts, text, raw.to_owned());
                self.state.tools.record_call(
                    &mut draft,
                    name,
                    call_id,
                    &arguments,
                    self.self_tools,
                );
                out.drafts.push(draft);
            }
            // The harness's own snapshots (of the work tree, for undo; of the environment): not
            // part of the dialogue.
            "ghost_snapshot" | "world_state" => out.drafts.push(Draft::new(
                EventType::System,
                ts,
                kind.replace('_', " "),
                raw.to_owned(),
            )),
            "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
                let call_id = str_of(item, "call_id").to_owned();
                let (text, exit_code) = tool_output(item.get("output").unwrap_or(&Value::Null));
                let mut draft = Draft::new(EventType::ToolResponse, ts, text, raw.to_owned());
                self.state.tools.name_result(&mut draft, call_id);
                draft.is_error = exit_code.is_some_and(|c| c != 0);
                draft.exit_code = exit_code;
                out.drafts.push(draft);
            }
            _ => out.drafts.push(Draft::new(
                EventType::Unknown,
                ts,
                String::new(),
                raw.to_owned(),
            )),
        }
    }

    fn event_msg(&mut self, payload: &Value, ts: Option<i64>, raw: &str, out: &mut AdapterOutput) {
        let kind = payload.get("type").and_then(Value::as_str).unwrap_or("");
        let runtime = |text: String| Draft::new(EventType::Runtime, ts, text, raw.to_owned());
        match kind {
            "user_message" => {
                let text = str_of(payload, "message");
                let request = split_ide_context(text).1;
                if is_injected(text) || request.is_empty() {
                    return;
                }
                let mut draft =
                    Draft::new(EventType::UserInput, ts, request.to_owned(), raw.to_owned());
                draft.starts_turn = true;
                self.mirror(MirrorKind::User, draft);
            }
            "agent_message" => {
                let text = str_of(payload, "message").to_owned();
                let mut draft = Draft::new(EventType::AssistantResponse, ts, text, raw.to_owned());
                draft.model = self.state.model.clone();
                self.mirror(MirrorKind::Assistant, draft);
            }
            "agent_reasoning" | "agent_reasoning_raw_content" => {
                let text = str_of(payload, "text").to_owned();
                let mut draft = Draft::new(EventType::Reasoning, ts, text, raw.to_owned());
                draft.model = self.state.model.clone();
                self.mirror(MirrorKind::Reasoning, draft);
            }
            "task_started" => {
                let mut draft = runtime("task started".into());
                draft.opens_turn = true;
                out.drafts.push(draft);
            }
            "task_complete" => {
                let mut draft = runtime("task complete".into());
                draft.ending = Some(Ending::Completed);
                out.drafts.push(draft);
            }
            "turn_aborted" => {
                let mut draft = runtime(format!("turn aborted: {}", str_of(payload, "reason")));
                draft.ending = Some(Ending::Interrupted);
                out.drafts.push(draft);
            }
            "token_count" => out.drafts.push(Draft::new(
                EventType::System,
                ts,
                token_summary(payload),
                raw.to_owned(),
            )),
            "exec_command_end" => {
                let mut draft = runtime(format!(
                    "command finished with exit code {}",
                    payload.get("exit_code").unwrap_or(&Value::Null)
                ));
                draft.exit_code = payload
                    .get("exit_code")
                    .and_then(Value::as_i64)
                    .and_then(|c| i32::try_from(c).ok());
                out.drafts.push(draft);
            }
            "context_compacted" => out.drafts.push(runtime("context compacted".into())),
            "error" | "stream_error" => {
                let mut draft = runtime(format!("error: {}", str_of(payload, "message")));
                draft.is_error = true;
                out.drafts.push(draft);
            }
            "" => out.drafts.push(Draft::new(
                EventType::Unknown,
                ts,
                String::new(),
                raw.to_owned(),
            )),
            other => out.drafts.push(runtime(other.replace('_', " "))),
        }
    }

    /// An item is kept; mirrors of its texts that are waiting are dropped, and its texts are
    /// remembered so mirrors arriving later are dropped too.
    fn keep_item(&mut self, kind: MirrorKind, texts: &[String]) {
        for text in texts {
            let hash = mirror_hash(text);
            match self
                .state
                .waiting
                .iter()
                .position(|w| w.kind == kind && w.hash == hash)
            {
                Some(at) => {
                    self.state.waiting.remove(at);
                }
                None => {
                    if self.state.items.len() >= ITEM_MEMORY {
                        self.state.items.remove(0);
                    }
                    self.state.items.push((kind, hash));
                }
            }
        }
    }

    /// A mirror: dropped if its item was kept already, otherwise held back for it.
    fn mirror(&mut self, kind: MirrorKind, draft: Draft) {
        let hash = mirror_hash(&draft.text);
        if let Some(at) = self
            .state
            .items
            .iter()
            .position(|&(k, h)| k == kind && h == hash)
        {
            self.state.items.remove(at);
            return;
        }
        self.state.waiting.push(Waiting {
            kind,
            hash,
            draft,
            age: 0,
        });
    }

    /// Before any record other than a mirror or an item: waiting mirrors age, and those whose
    /// item is overdue (or whose turn is ending or beginning) stand in for it.
    fn age_mirrors(&mut self, kind: &str, payload: &Value, out: &mut AdapterOutput) {
        if self.state.waiting.is_empty() {
            return;
        }
        let inner = payload.get("type").and_then(Value::as_str).unwrap_or("");
        let is_copy_or_item = match kind {
            "event_msg" => matches!(
                inner,
                "user_message"
                    | "agent_message"
                    | "agent_reasoning"
                    | "agent_reasoning_raw_content"
            ),
            "response_item" => matches!(inner, "message" | "reasoning"),
            _ => false,
        };
        if is_copy_or_item {
            return;
        }
        let boundary = kind == "turn_context"
            || (kind == "event_msg"
                && matches!(inner, "task_complete" | "turn_aborted" | "task_started"));
        for waiting in &mut self.state.waiting {
            waiting.age += 1;
        }
        let (due, keep): (Vec<Waiting>, Vec<Waiting>) = std::mem::take(&mut self.state.waiting)
            .into_iter()
            .partition(|w| boundary || w.age > MIRROR_PATIENCE);
        self.state.waiting = keep;
        out.drafts.extend(due.into_iter().map(|w| w.draft));
    }
}

fn mirror_hash(text: &str) -> u64 {
    let normalised: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    xxhash_rust::xxh3::xxh3_64(normalised.as_bytes())
}

/// The IDE extension puts the editor's state ahead of the prompt (`# Context from my IDE
/// setup:` … `## My request for Codex:` …): (context, request), either possibly empty.
fn split_ide_context(text: &str) -> (&str, &str) {
    const CONTEXT: &str = "# Context from my IDE setup:";
    const REQUEST: &str = "## My request for Codex:";
    if !text.trim_start().starts_with(CONTEXT) {
        return ("", text);
    }
    match text.find(REQUEST) {
        Some(at) => (text[..at].trim(), text[at + REQUEST.len()..].trim()),
        None => (text.trim(), ""),
    }
}

fn is_injected(text: &str) -> bool {
    let head = text.trim_start();
    INJECTED_PREFIXES.iter().any(|p| head.starts_with(p))
}

fn str_of<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A tool output's text and exit code. Older Codex wrapped outputs as a JSON string
/// `{"output": …, "metadata": {"exit_code": N}}`; newer ones write plain text headed `Exit code: N`.
fn tool_output(output: &Value) -> (String, Option<i32>) {
    let text = match output {
        Value::String(s) => s.clone(),
        Value::Array(_) => content_text(output),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    if let Ok(Value::Object(wrapped)) = serde_json::from_str::<Value>(&text)
        && let Some(inner) = wrapped.get("output").and_then(Value::as_str)
    {
        let code = wrapped
            .get("metadata")
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_i64)
            .and_then(|c| i32::try_from(c).ok());
        return (inner.to_owned(), code.or_else(|| exit_code_in_text(inner)));
    }
    let code = exit_code_in_text(&text);
    (text, code)
}

fn token_summary(payload: &Value) -> String {
    let usage = payload.get("info").and_then(|i| i.get("last_token_usage"));
    match usage {
        Some(u) => format!(
            "token usage: input {}, output {}",
            u.get("input_tokens").unwrap_or(&Value::Null),
            u.get("output_tokens").unwrap_or(&Value::Null)
        ),
        None => "token usage".into(),
    }
}

/// A whole-file JSON session — `{"session": {id, timestamp, instructions}, "items": [...]}`,
/// as the TypeScript Codex CLI saved it — as JSON Lines: the session line, then one line per
/// item, which is the shape of the Codex logs that followed it.
pub(crate) fn render(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    let bytes = super::rendered::read_source(path)?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| super::rendered::invalid(format!("not valid JSON: {e}")))?;
    let (Some(session @ Value::Object(_)), Some(Value::Array(items))) =
        (value.get("session"), value.get("items"))
    else {
        return Err(super::rendered::invalid(
            "a .json file that is not a Codex session ({\"session\", \"items\"})",
        ));
    };
    let mut lines = Vec::with_capacity(bytes.len());
    for record in std::iter::once(session).chain(items) {
        serde_json::to_writer(&mut lines, record).map_err(std::io::Error::other)?;
        lines.push(b'\n');
    }
    Ok(lines)
}

// ---- The harness's log format -------------------------------------------------------------

/// Where Codex keeps its logs and how they are recognised and named.
pub(crate) struct Format;

/// Reads one record of a Codex log.
pub(crate) fn read(
    state: &mut CodexState,
    cx: &ReadContext<'_>,
    record: &Value,
    raw: &str,
    out: &mut AdapterOutput,
) {
    Codex {
        state,
        self_tools: cx.self_tools,
    }
    .read(record, raw, out);
}

impl LogFormat for Format {
    fn default_sources(&self) -> &'static [DefaultSource] {
        &[DefaultSource {
            name: "codex",
            glob: "~/.codex/sessions/**/rollout-*.json*",
        }]
    }

    fn path_hints(&self) -> &'static [&'static str] {
        &["/.codex/"]
    }

    fn scan_names(&self) -> &'static [&'static str] {
        // The TypeScript CLI's whole-file sessions too.
        &["*.jsonl", "rollout-*.json"]
    }

    /// An envelope around a payload, or (mid-2025, before `session_meta`) a bare metadata
    /// line, `record_type` state lines and items in the Responses API's shapes.
    fn detect_record(&self, record: &Map<String, Value>) -> bool {
        let has = |key: &str| record.contains_key(key);
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        let envelope = [
            "session_meta",
            "response_item",
            "event_msg",
            "turn_context",
            "compacted",
        ]
        .contains(&kind)
            && has("payload");
        let header = kind.is_empty() && has("id") && has("instructions");
        let item = match kind {
            "message" => responses_content(record.get("content")),
            "function_call" | "custom_tool_call" => has("call_id") && has("name"),
            "function_call_output" | "custom_tool_call_output" => has("call_id") && has("output"),
            "reasoning" => has("summary"),
            "local_shell_call" | "web_search_call" => has("status") || has("action"),
            _ => false,
        };
        envelope || header || item || has("record_type") && record.len() <= 2
    }

    /// The TypeScript CLI's `{"session", "items"}`.
    fn detect_document(&self, document: &Value) -> bool {
        document.get("session").is_some() && document.get("items").is_some()
    }

    /// `rollout-<time>-<session uuid>`.
    fn identity_from_name(&self, path: &Path) -> Option<Identity> {
        session_id_of_name(stem(path)?).map(Identity::main)
    }

    /// `session_meta`'s id, or before `session_meta` existed the id of the opening record.
    fn identity_from_record(&self, record: &Map<String, Value>) -> Option<Identity> {
        let id = match record.get("type").and_then(Value::as_str) {
            Some("session_meta") => id_text(record.get("payload").and_then(|p| p.get("id"))),
            None => id_text(record.get("id")).filter(|_| record.contains_key("timestamp")),
            Some(_) => None,
        }?;
        Some(Identity::main(&id))
    }

    /// The time in a rollout's name (`rollout-2025-05-07T17-24-21-<uuid>`), read as UTC.
    fn name_time(&self, path: &Path) -> Option<i64> {
        let stamp = stem(path)?.strip_prefix("rollout-")?.get(..19)?;
        let (date, clock) = stamp.split_once('T')?;
        crate::text::rfc3339_ms(&format!("{date}T{}Z", clock.replace('-', ":")))
    }

    fn is_rendered(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "json")
    }

    fn render(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        render(path)
    }
}

/// The session uuid that ends a rollout's name.
pub(crate) fn session_id_of_name(stem: &str) -> Option<&str> {
    let tail = stem.get(stem.len().checked_sub(36)?..)?;
    is_uuid(tail).then_some(tail)
}

/// Content in the shape of OpenAI's Responses API items (`input_text`, `output_text`).
fn responses_content(content: Option<&Value>) -> bool {
    content.and_then(Value::as_array).is_some_and(|blocks| {
        blocks.iter().any(|b| {
            matches!(
                b.get("type").and_then(Value::as_str),
                Some("input_text" | "output_text" | "input_image" | "refusal")
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(lines: &[Value]) -> Vec<Draft> {
        let tools = SelfTools::new(&["moraine".into()]);
        let mut codex = Codex {
            state: &mut CodexState::default(),
            self_tools: &tools,
        };
        let mut out = AdapterOutput::default();
        for line in lines {
            codex.read(line, &line.to_string(), &mut out);
        }
        out.drafts
    }

    #[test]
    fn test_mirrors_are_dropped_whichever_comes_first() {
        let drafts = read_all(&[
            json!({"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}),
            json!({"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":{"type":"user_message","message":"fix it"}}),
            json!({"timestamp":"2026-01-01T00:00:01Z","type":"event_msg","payload":{"type":"agent_reasoning","text":"**Plan** look"}}),
            json!({"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"**Plan** look"}]}}),
            json!({"timestamp":"2026-01-01T00:00:02Z","type":"event_msg","payload":{"type":"agent_message","message":"Done."}}),
            json!({"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}}),
        ]);
        let types: Vec<_> = drafts.iter().map(|d| d.event_type).collect();
        assert_eq!(
            types,
            [
                EventType::UserInput,
                EventType::Reasoning,
                EventType::AssistantResponse
            ]
        );
    }

    #[test]
    fn test_tool_call_and_output_with_exit_code() {
        let drafts = read_all(&[
            json!({"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"function_call","name":"mcp__moraine__search_sessions","arguments":"{\"query\":\"x\"}","call_id":"c1"}}),
            json!({"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"boom\",\"metadata\":{\"exit_code\":2}}"}}),
            json!({"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c9","output":"Exit code: 0\nWall time: 1s\nOutput:\nok"}}),
        ]);
        assert!(drafts[0].self_tool && drafts[1].self_tool);
        assert_eq!(drafts[1].tool_name, "mcp__moraine__search_sessions");
        assert_eq!(
            (drafts[1].text.as_str(), drafts[1].exit_code),
            ("boom", Some(2))
        );
        assert_eq!(drafts[2].exit_code, Some(0));
        assert_eq!(
            drafts[0].text,
            r#"mcp__moraine__search_sessions(query="x")"#
        );
    }

    #[test]
    fn test_injected_context_is_system_and_compaction_does_not_replay() {
        let drafts = read_all(&[
            json!({"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/x</cwd>\n</environment_context>"}]}}),
            json!({"timestamp":"2026-01-01T00:00:01Z","type":"compacted","payload":{"message":"summary","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"old"}]}]}}),
        ]);
        assert_eq!(drafts.len(), 2);
        assert_eq!(drafts[0].event_type, EventType::System);
        assert!(!drafts[0].starts_turn);
        assert_eq!(drafts[1].event_type, EventType::Compaction);
    }

    #[test]
    fn test_ghost_snapshots_are_system_events() {
        let drafts = read_all(&[
            json!({"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"ghost_snapshot","ghost_commit":{"id":"abc","parent":"def","preexisting_untracked_files":[],"preexisting_untracked_dirs":[]}}}),
        ]);
        let seen: Vec<_> = drafts
            .iter()
            .map(|d| (d.event_type, d.text.as_str()))
            .collect();
        assert_eq!(seen, [(EventType::System, "ghost snapshot")]);
    }
}
