//! The closed sets of the domain: the spec's event types (in canonical order), session modes,
//! and the agent harnesses whose logs are ingested.

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
    pub const ALL: [Self; 9] = [
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
    pub const SEARCHABLE: [Self; 8] = [
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
    pub const DEFAULT_SEARCH: [Self; 3] =
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

/// Bit 7 of a posting's `kind` marks this service's own tool traffic (`kind = event type code +
/// 128 × self_tool`, written by the `postings_mv` view of `sql/002_search_index.sql`); it is
/// searched only when `tools.include_self_events` is set.
pub const SELF_TRAFFIC_BIT: u8 = 0x80;

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
    pub const ALL: [Self; 4] = [
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

/// The agent harness that wrote a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
pub enum Harness {
    #[serde(rename = "codex")]
    #[value(name = "codex")]
    Codex,
    /// Also accepted as `claude`.
    #[serde(rename = "claude-code", alias = "claude")]
    #[value(name = "claude-code", alias = "claude")]
    ClaudeCode,
    /// Also accepted as `gemini`.
    #[serde(rename = "gemini-cli", alias = "gemini")]
    #[value(name = "gemini-cli", alias = "gemini")]
    GeminiCli,
    #[serde(rename = "cursor")]
    #[value(name = "cursor")]
    Cursor,
    #[serde(rename = "opencode")]
    #[value(name = "opencode")]
    OpenCode,
    /// Also accepted as `copilot`.
    #[serde(rename = "copilot-cli", alias = "copilot")]
    #[value(name = "copilot-cli", alias = "copilot")]
    CopilotCli,
    /// Also accepted as `qwen`.
    #[serde(rename = "qwen-code", alias = "qwen")]
    #[value(name = "qwen-code", alias = "qwen")]
    QwenCode,
    /// Factory's Droid; also accepted as `factory-droid`.
    #[serde(rename = "droid", alias = "factory-droid")]
    #[value(name = "droid", alias = "factory-droid")]
    Droid,
}

impl Harness {
    pub const ALL: [Self; 8] = [
        Self::Codex,
        Self::ClaudeCode,
        Self::GeminiCli,
        Self::Cursor,
        Self::OpenCode,
        Self::CopilotCli,
        Self::QwenCode,
        Self::Droid,
    ];

    /// The name stored in `sessions.harness` and accepted by the tools' `harness` filter.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Codex => "codex",
            Self::ClaudeCode => "claude-code",
            Self::GeminiCli => "gemini-cli",
            Self::Cursor => "cursor",
            Self::OpenCode => "opencode",
            Self::CopilotCli => "copilot-cli",
            Self::QwenCode => "qwen-code",
            Self::Droid => "droid",
        }
    }

    /// The harness stored (or filtered) under `name`, or one of its other names.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "claude" => Some(Self::ClaudeCode),
            "gemini" => Some(Self::GeminiCli),
            "copilot" => Some(Self::CopilotCli),
            "qwen" => Some(Self::QwenCode),
            "factory-droid" => Some(Self::Droid),
            _ => Self::ALL.into_iter().find(|h| h.as_str() == name),
        }
    }

    /// The harness's own name, as its users know it.
    pub fn title(self) -> &'static str {
        match self {
            Self::Codex => "Codex",
            Self::ClaudeCode => "Claude Code",
            Self::GeminiCli => "Gemini CLI",
            Self::Cursor => "Cursor",
            Self::OpenCode => "OpenCode",
            Self::CopilotCli => "Copilot CLI",
            Self::QwenCode => "Qwen Code",
            Self::Droid => "Droid",
        }
    }

    /// Every harness's own name, in a list for people ("Codex, Claude Code, … and Droid").
    pub fn titles() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|h| h.title()).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }

    /// The source name used for files named on the command line.
    pub fn default_source(self) -> &'static str {
        match self {
            Self::Codex => "codex",
            Self::ClaudeCode => "claude",
            Self::GeminiCli => "gemini",
            Self::Cursor => "cursor",
            Self::OpenCode => "opencode",
            Self::CopilotCli => "copilot",
            Self::QwenCode => "qwen",
            Self::Droid => "droid",
        }
    }
}

impl std::fmt::Display for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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

    #[test]
    fn test_self_traffic_bit_matches_the_postings_view() {
        let view = include_str!("../sql/002_search_index.sql");
        let bit = format!("{SELF_TRAFFIC_BIT} * self_tool");
        assert!(view.contains(&bit), "postings_mv must set {bit}");
        assert!(EventType::ALL.iter().all(|t| t.code() < SELF_TRAFFIC_BIT));
    }

    #[test]
    fn test_harness_names_and_alias() {
        for harness in Harness::ALL {
            let name = serde_json::to_value(harness).unwrap();
            assert_eq!(name, harness.as_str());
            assert_eq!(serde_json::from_value::<Harness>(name).unwrap(), harness);
        }
        let alias: Harness = serde_json::from_value(serde_json::json!("claude")).unwrap();
        assert_eq!(alias, Harness::ClaudeCode);
    }
}
