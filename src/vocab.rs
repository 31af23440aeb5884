//! The spec's event type vocabulary, in its canonical order, and session modes.

use serde::{Deserialize, Serialize};

/// Normalised event types. The discriminants are stored in ClickHouse (`Enum8` and postings'
/// `kind`), so they never change; the declaration order is the canonical order of the spec.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum EventType {
    UserInput = 1,
    AssistantResponse = 2,
    Reasoning = 3,
    ToolCall = 4,
    ToolResponse = 5,
    Compaction = 6,
    System = 7,
    Runtime = 8,
    Unknown = 9,
}

impl EventType {
    /// Every type, in canonical order.
    pub const ALL: [EventType; 9] = [
        Self::UserInput,
        Self::AssistantResponse,
        Self::Reasoning,
        Self::ToolCall,
        Self::ToolResponse,
        Self::Compaction,
        Self::System,
        Self::Runtime,
        Self::Unknown,
    ];

    /// Types `search_sessions` accepts (all but `unknown`), in canonical order.
    pub const SEARCHABLE: [EventType; 8] = [
        Self::UserInput,
        Self::AssistantResponse,
        Self::Reasoning,
        Self::ToolCall,
        Self::ToolResponse,
        Self::Compaction,
        Self::System,
        Self::Runtime,
    ];

    /// What `search_sessions` searches when the caller names no types.
    pub const DEFAULT_SEARCH: [EventType; 3] =
        [Self::UserInput, Self::AssistantResponse, Self::ToolResponse];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserInput => "user_input",
            Self::AssistantResponse => "assistant_response",
            Self::Reasoning => "reasoning",
            Self::ToolCall => "tool_call",
            Self::ToolResponse => "tool_response",
            Self::Compaction => "compaction",
            Self::System => "system",
            Self::Runtime => "runtime",
            Self::Unknown => "unknown",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.code() == code)
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of work a session was, derived from its tool use (spec-notes: web search wins over
/// this service's own tools, which win over any other tool use; no tool use is `chat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionMode {
    WebSearch,
    McpInternal,
    ToolCalling,
    Chat,
}

impl SessionMode {
    pub const ALL: [SessionMode; 4] = [
        Self::WebSearch,
        Self::McpInternal,
        Self::ToolCalling,
        Self::Chat,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::WebSearch => "web_search",
            Self::McpInternal => "mcp_internal",
            Self::ToolCalling => "tool_calling",
            Self::Chat => "chat",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_codes_round_trip_and_order_is_canonical() {
        for (i, t) in EventType::ALL.iter().enumerate() {
            assert_eq!(t.code() as usize, i + 1);
            assert_eq!(EventType::from_code(t.code()), Some(*t));
            assert_eq!(EventType::parse(t.as_str()), Some(*t));
        }
        let mut sorted = EventType::ALL;
        sorted.sort();
        assert_eq!(sorted, EventType::ALL);
    }
}
