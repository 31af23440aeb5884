//! Factory Droid sessions (`~/.factory/sessions/<project>/<session>.jsonl`) normalised into
//! draft events.
//!
//! The first line is `session_start` (id, title, cwd; Droid rewrites it when it retitles the
//! session, and the log is then read again). Messages carry Anthropic-style content blocks;
//! tool results come back in user-role messages. A turn starts at a user message the user typed
//! (not a hook's, not one hidden from them); it ends at `agent_turn_outcome`, or, in logs from
//! before that record, at an answer with no tool calls that nothing but bookkeeping follows.

use std::path::Path;

use serde_json::Map;

use super::identity::{Identity, is_uuid, stem};
use super::{DefaultSource, LogFormat, ReadContext};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::adapter::{AdapterOutput, ToolNames};
use super::draft::{Draft, Ending, SelfTools, content_text, exit_code_in_text, parse_ts};
use crate::vocab::EventType;

/// Adapter state carried across runs in the checkpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct DroidState {
    tools: ToolNames,
}

pub(crate) struct Droid<'a> {
    pub state: &'a mut DroidState,
    pub self_tools: &'a SelfTools,
}

impl Droid<'_> {
    /// Normalises one record.
    pub(crate) fn read(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
        let ts = parse_ts(record.get("timestamp"));
        let text = |key: &str| {
            record
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        match record.get("type").and_then(Value::as_str).unwrap_or("") {
            "session_start" => {
                let cwd = text("lastCwd");
                let cwd = if cwd.is_empty() { text("cwd") } else { cwd };
                if !cwd.is_empty() {
                    out.cwd = Some(cwd);
                }
                let title = ["title", "sessionTitle"]
                    .iter()
                    .find_map(|k| record.get(*k).and_then(Value::as_str))
                    .filter(|t| !t.is_empty());
                if let Some(title) = title {
                    out.title = Some(title.to_owned());
                }
            }
            "message" => self.message(record, ts, out),
            "compaction_state" => out.drafts.push(Draft::new(
                EventType::Compaction,
                ts,
                text("summaryText"),
                raw.to_owned(),
            )),
            "todo_state" => {
                let items: Vec<String> = record
                    .get("todos")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|t| {
                        let content = t.get("content").and_then(Value::as_str).unwrap_or("");
                        let status = t.get("status").and_then(Value::as_str).unwrap_or("");
                        format!("[{status}] {content}")
                    })
                    .collect();
                let text = items.join("\n");
                out.drafts
                    .push(Draft::bookkeeping(ts, text, raw.to_owned()));
            }
            "agent_turn_outcome" => {
                let reason = text("reason");
                let ending = match reason.as_str() {
                    "completed" | "spec_handoff" => Ending::Completed,
                    "cancelled" | "permission_rejected" => Ending::Interrupted,
                    _ => Ending::Failed,
                };
                let mut draft = Draft::new(
                    EventType::Runtime,
                    ts,
                    format!("turn {}", reason.replace('_', " ")),
                    raw.to_owned(),
                );
                draft.is_error = ending == Ending::Failed;
                draft.ending = Some(ending);
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

    fn message(&mut self, record: &Value, ts: Option<i64>, out: &mut AdapterOutput) {
        let message = record.get("message").unwrap_or(&Value::Null);
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let model = message
            .get("modelId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        // Hook output and context the user never saw are the harness talking.
        let hidden = message.get("hookEventName").is_some()
            || message
                .get("visibility")
                .and_then(Value::as_str)
                .is_some_and(|v| v != "both")
            || message.get("isUserVisible").and_then(Value::as_bool) == Some(false)
            || message.get("hiddenFromUserViews").and_then(Value::as_bool) == Some(true);
        let blocks: Vec<Value> = match message.get("content") {
            Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
            Some(Value::Array(blocks)) => blocks.clone(),
            _ => Vec::new(),
        };
        let calls = blocks
            .iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"));
        for block in &blocks {
            let raw = block.to_string();
            let body = block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let mut draft = match (
                role,
                block.get("type").and_then(Value::as_str).unwrap_or(""),
            ) {
                ("user", "tool_result") => {
                    let id = block
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let output = block.get("content").map(content_text).unwrap_or_default();
                    let mut d = self.state.tools.result(ts, id, output, raw);
                    d.is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
                    if d.tool_name == "Execute" {
                        d.exit_code = exit_status(&d.text).or((!d.is_error).then_some(0));
                    }
                    d
                }
                ("user", "text")
                    if hidden || body.trim_start().starts_with("<system-reminder>") =>
                {
                    Draft::bookkeeping(ts, body, raw)
                }
                ("user", "text") => {
                    let mut d = Draft::new(EventType::UserInput, ts, body, raw);
                    d.starts_turn = true;
                    d
                }
                ("user", other) => Draft::new(EventType::UserInput, ts, format!("[{other}]"), raw),
                (_, "text") => {
                    let mut d = Draft::new(EventType::AssistantResponse, ts, body, raw);
                    d.commentary = calls;
                    d.may_end_turn = !calls;
                    d
                }
                (_, "thinking") => {
                    let thought = block.get("thinking").and_then(Value::as_str).unwrap_or("");
                    Draft::new(EventType::Reasoning, ts, thought.to_owned(), raw)
                }
                (_, "redacted_thinking") => continue,
                (_, "tool_use") => {
                    let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
                    let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                    let input = block.get("input").unwrap_or(&Value::Null);
                    self.state
                        .tools
                        .call(ts, name, id, input, raw, self.self_tools)
                }
                _ => Draft::new(EventType::Unknown, ts, body, raw),
            };
            if role == "assistant" {
                draft.model.clone_from(&model);
            }
            out.drafts.push(draft);
        }
    }
}

/// The exit status in Droid's `Execute` output: the trailer `[Process exited with code N]`, or
/// the first line `Command failed (exit code: N)`.
fn exit_status(text: &str) -> Option<i32> {
    let tail = text.trim_end();
    if let Some(at) = tail.rfind("[Process exited with code ")
        && let Some(code) = tail[at + "[Process exited with code ".len()..]
            .strip_suffix(']')
            .and_then(|c| c.trim().parse().ok())
    {
        return Some(code);
    }
    if let Some(at) = text.find("(exit code: ") {
        let rest = &text[at + "(exit code: ".len()..];
        return rest[..rest.find(')')?].trim().parse().ok();
    }
    exit_code_in_text(text)
}

// ---- The harness's log format -------------------------------------------------------------

/// Where Droid keeps its logs and how they are recognised and named.
pub(crate) struct Format;

/// Reads one record of a Droid log.
pub(crate) fn read(
    state: &mut DroidState,
    cx: &ReadContext<'_>,
    record: &Value,
    raw: &str,
    out: &mut AdapterOutput,
) {
    Droid {
        state,
        self_tools: cx.self_tools,
    }
    .read(record, raw, out);
}

impl LogFormat for Format {
    fn default_sources(&self) -> &'static [DefaultSource] {
        &[DefaultSource {
            name: "droid",
            glob: "~/.factory/sessions/**/*.jsonl",
        }]
    }

    fn path_hints(&self) -> &'static [&'static str] {
        &["/.factory/"]
    }

    fn is_log_name(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "jsonl")
    }

    /// Its own record kinds (a log opens with `session_start`). Its messages look like those
    /// of other harnesses (Pi, OpenClaw) and say nothing alone.
    fn detect_record(&self, record: &Map<String, Value>) -> bool {
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        [
            "session_start",
            "todo_state",
            "compaction_state",
            "agent_turn_outcome",
        ]
        .contains(&kind)
    }

    fn identity_from_name(&self, path: &Path) -> Option<Identity> {
        let stem = stem(path)?;
        is_uuid(stem).then(|| Identity::main(stem))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_exit_statuses() {
        assert_eq!(
            exit_status("Command failed (exit code: 2)\nboom\n[Process exited with code 2]"),
            Some(2)
        );
        assert_eq!(
            exit_status("Command failed (exit code: 101)\nFAILED"),
            Some(101)
        );
        assert_eq!(exit_status("all fine"), None);
    }
}
