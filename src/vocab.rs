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
    /// Whether the type is what the person and the agent say to each other (user inputs and
    /// assistant responses): what a session's vector of meaning is made of.
    pub fn is_prose(self) -> bool {
        matches!(self, Self::UserInput | Self::AssistantResponse)
    }

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

/// The agent harness that wrote a log. Its names are written once, here: the first is the one
/// stored in `sessions.harness` and shown; the others are accepted wherever a harness is named
/// (the command line, the config file, the ingest API). `title` is the harness's own name, as
/// its users know it; `source` the source name of files named on the command line.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::EnumMessage,
    strum::EnumProperty,
    strum::VariantArray,
)]
pub enum Harness {
    #[strum(to_string = "codex", props(title = "Codex", source = "codex"))]
    Codex,
    #[strum(
        to_string = "claude-code",
        serialize = "claude",
        props(title = "Claude Code", source = "claude")
    )]
    ClaudeCode,
    #[strum(
        to_string = "gemini-cli",
        serialize = "gemini",
        props(title = "Gemini CLI", source = "gemini")
    )]
    GeminiCli,
    #[strum(to_string = "cursor", props(title = "Cursor", source = "cursor"))]
    Cursor,
    #[strum(to_string = "opencode", props(title = "OpenCode", source = "opencode"))]
    OpenCode,
    #[strum(
        to_string = "copilot-cli",
        serialize = "copilot",
        props(title = "Copilot CLI", source = "copilot")
    )]
    CopilotCli,
    #[strum(
        to_string = "qwen-code",
        serialize = "qwen",
        props(title = "Qwen Code", source = "qwen")
    )]
    QwenCode,
    /// Factory's Droid.
    #[strum(
        to_string = "droid",
        serialize = "factory-droid",
        props(title = "Droid", source = "droid")
    )]
    Droid,
    #[strum(to_string = "aider", props(title = "Aider", source = "aider"))]
    Aider,
    /// OpenClaw (formerly Clawdbot and Moltbot), on Pi's session format.
    #[strum(to_string = "openclaw", props(title = "OpenClaw", source = "openclaw"))]
    OpenClaw,
    /// The Continue IDE extensions and `cn` CLI.
    #[strum(to_string = "continue", props(title = "Continue", source = "continue"))]
    Continue,
}

impl Harness {
    /// Every harness, in declaration order.
    pub const ALL: &'static [Self] = <Self as strum::VariantArray>::VARIANTS;

    /// Every harness, in declaration order.
    pub fn all() -> impl Iterator<Item = Self> {
        Self::ALL.iter().copied()
    }

    /// The name stored in `sessions.harness` and accepted by the tools' `harness` filter.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The harness stored (or filtered) under `name`, or one of its other names.
    pub fn parse(name: &str) -> Option<Self> {
        name.parse().ok()
    }

    /// Its other names.
    pub fn aliases(self) -> impl Iterator<Item = &'static str> {
        let name = self.as_str();
        strum::EnumMessage::get_serializations(&self)
            .iter()
            .copied()
            .filter(move |alias| *alias != name)
    }

    /// The harness's own name, as its users know it.
    pub fn title(self) -> &'static str {
        strum::EnumProperty::get_str(&self, "title").expect("every harness has a title")
    }

    /// Every harness's own name, in a list for people ("Codex, Claude Code, … and Droid").
    pub fn titles() -> String {
        let names: Vec<&str> = Self::all().map(Self::title).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }

    /// The source name used for files named on the command line.
    pub fn default_source(self) -> &'static str {
        strum::EnumProperty::get_str(&self, "source").expect("every harness has a source name")
    }
}

impl Serialize for Harness {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Harness {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Self::parse(&name).ok_or_else(|| {
            let known: Vec<&str> = Self::all().map(Self::as_str).collect();
            serde::de::Error::custom(format!(
                "unknown harness {name:?}, expected one of {}",
                known.join(", ")
            ))
        })
    }
}

impl clap::ValueEnum for Harness {
    fn value_variants<'a>() -> &'a [Self] {
        Self::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()).aliases(self.aliases()))
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
        for harness in Harness::all() {
            let name = serde_json::to_value(harness).unwrap();
            assert_eq!(name, harness.as_str());
            assert_eq!(serde_json::from_value::<Harness>(name).unwrap(), harness);
            for alias in harness.aliases() {
                assert_eq!(Harness::parse(alias), Some(harness));
            }
        }
        let alias: Harness = serde_json::from_value(serde_json::json!("claude")).unwrap();
        assert_eq!(alias, Harness::ClaudeCode);
        assert_eq!(
            Harness::ClaudeCode.aliases().collect::<Vec<_>>(),
            ["claude"]
        );
        assert_eq!(Harness::Codex.aliases().count(), 0);
        assert_eq!(Harness::Droid.title(), "Droid");
        assert_eq!(Harness::QwenCode.default_source(), "qwen");
        assert_eq!(Harness::parse("openclaw"), Some(Harness::OpenClaw));
        assert_eq!(Harness::OpenClaw.title(), "OpenClaw");
        assert_eq!(Harness::parse("continue"), Some(Harness::Continue));
        assert_eq!(Harness::Continue.default_source(), "continue");
        assert!(serde_json::from_value::<Harness>(serde_json::json!("vim")).is_err());
    }
}
