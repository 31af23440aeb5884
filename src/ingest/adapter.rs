//! What the harness adapters share: their output and the tool-call-id → tool-name memory.

use serde::{Deserialize, Serialize};

use super::draft::Draft;

/// What one record contributed.
#[derive(Debug, Default)]
pub struct AdapterOutput {
    pub drafts: Vec<Draft>,
    /// The harness's own title for the session.
    pub title: Option<String>,
    /// The harness's own summary of the session.
    pub summary: Option<String>,
    pub cwd: Option<String>,
}

/// How many tool calls are remembered while waiting for their results. Results usually follow
/// their call within a few records; the bound keeps checkpoint state small.
const TOOL_MEMORY: usize = 256;

/// Tool names by call id, so a result can name the tool that produced it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ToolNames {
    calls: Vec<(String, String, bool)>,
}

impl ToolNames {
    pub fn remember(&mut self, call_id: &str, name: &str, is_self: bool) {
        if call_id.is_empty() {
            return;
        }
        if self.calls.len() >= TOOL_MEMORY {
            self.calls.remove(0);
        }
        self.calls
            .push((call_id.to_owned(), name.to_owned(), is_self));
    }

    /// The tool name and self-tool flag of a call.
    pub fn lookup(&self, call_id: &str) -> Option<(String, bool)> {
        self.calls
            .iter()
            .rev()
            .find(|(id, _, _)| id == call_id)
            .map(|(_, name, is_self)| (name.clone(), *is_self))
    }
}
