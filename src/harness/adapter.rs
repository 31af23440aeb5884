//! What the harness adapters share: their output and the tool-call-id → tool-name memory.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::draft::{Draft, SelfTools, is_web_search, render_call};
use crate::vocab::EventType;

/// What one record contributed.
#[derive(Debug, Default)]
pub(crate) struct AdapterOutput {
    pub drafts: Vec<Draft>,
    /// The harness's own title for the session.
    pub title: Option<String>,
    /// The harness's own summary of the session.
    pub summary: Option<String>,
    pub cwd: Option<String>,
    /// When the session began and was last updated, by the harness's own account (a store's
    /// conversation whose messages carry no times).
    pub started_at: Option<i64>,
    pub updated_at: Option<i64>,
}

/// How many tool calls are remembered while waiting for their results. Results usually follow
/// their call within a few records; the bound keeps checkpoint state small.
const TOOL_MEMORY: usize = 256;

/// How many results written before their call are remembered until the call comes.
const EARLY_RESULTS: usize = 64;

/// Tool names by call id, so a result can name the tool that produced it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ToolNames {
    calls: Vec<(String, String, bool)>,
    /// Call ids of results logged before their call (parallel calls are sometimes logged out
    /// of order): the call, when it comes, names them.
    #[serde(default)]
    early_results: Vec<String>,
}

impl ToolNames {
    pub(crate) fn remember(&mut self, call_id: &str, name: &str, is_self: bool) {
        if call_id.is_empty() {
            return;
        }
        if self.calls.len() >= TOOL_MEMORY {
            self.calls.remove(0);
        }
        self.calls
            .push((call_id.to_owned(), name.to_owned(), is_self));
    }

    /// Makes `draft` the call `call_id` of tool `name` with `arguments`, and remembers it.
    pub(crate) fn record_call(
        &mut self,
        draft: &mut Draft,
        name: String,
        call_id: String,
        arguments: &Value,
        self_tools: &SelfTools,
    ) {
        draft.self_tool = self_tools.matches(&name);
        draft.web_search = is_web_search(&name);
        draft.arguments = arguments.to_string();
        self.remember(&call_id, &name, draft.self_tool);
        if let Some(at) = self.early_results.iter().position(|id| *id == call_id) {
            self.early_results.remove(at);
            draft.names_earlier_result = true;
        }
        draft.tool_call_id = call_id;
        draft.tool_name = name;
    }

    /// The call `call_id` of tool `name` with `arguments`, shown as `name(arguments)`, and
    /// remembered so that its result is named after it.
    pub(crate) fn call(
        &mut self,
        ts: Option<i64>,
        name: &str,
        call_id: &str,
        arguments: &Value,
        raw: String,
        self_tools: &SelfTools,
    ) -> Draft {
        let text = render_call(name, arguments);
        let mut draft = Draft::new(EventType::ToolCall, ts, text, raw);
        self.record_call(
            &mut draft,
            name.to_owned(),
            call_id.to_owned(),
            arguments,
            self_tools,
        );
        draft
    }

    /// The result `text` of call `call_id`, named after the call when it is remembered.
    pub(crate) fn result(
        &mut self,
        ts: Option<i64>,
        call_id: &str,
        text: String,
        raw: String,
    ) -> Draft {
        let mut draft = Draft::new(EventType::ToolResponse, ts, text, raw);
        self.name_result(&mut draft, call_id.to_owned());
        draft
    }

    /// Makes `draft` the result of call `call_id`, named after the call when it is remembered.
    pub(crate) fn name_result(&mut self, draft: &mut Draft, call_id: String) {
        if let Some((name, is_self)) = self.lookup(&call_id) {
            draft.tool_name = name;
            draft.self_tool = is_self;
        } else if !call_id.is_empty() {
            if self.early_results.len() >= EARLY_RESULTS {
                self.early_results.remove(0);
            }
            self.early_results.push(call_id.clone());
        }
        draft.tool_call_id = call_id;
    }

    /// The tool name and self-tool flag of a call.
    pub(crate) fn lookup(&self, call_id: &str) -> Option<(String, bool)> {
        self.calls
            .iter()
            .rev()
            .find(|(id, _, _)| id == call_id)
            .map(|(_, name, is_self)| (name.clone(), *is_self))
    }
}
