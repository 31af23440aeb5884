//! GitHub Copilot CLI sessions (`~/.copilot/session-state/<session>/events.jsonl`, and the older
//! flat `session-state/<session>.jsonl`) normalised into draft events.
//!
//! Each line is an event `{type, data, id, timestamp, parentId}`. A turn starts at a
//! `user.message` typed while the agent was idle (not one steered into a running turn, not a
//! sub-agent's); it ends at the `assistant.turn_end` after an answer with no tool requests, at an
//! `abort` or at a `session.error`. A sub-agent's events sit in the same file, marked by
//! `parentToolCallId` or `agentId`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::adapter::{AdapterOutput, ToolNames};
use super::draft::{Draft, Ending, SelfTools, exit_code_in_text, parse_ts};
use crate::vocab::EventType;

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
    /// Normalises one event.
    pub(crate) fn read(&mut self, record: &Value, raw: &str, out: &mut AdapterOutput) {
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
                drafts.push(Draft::bookkeeping(
                    ts,
                    "imported an older session".into(),
                    raw.to_owned(),
                ));
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
