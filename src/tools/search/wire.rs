//! `search_sessions` on the wire: the canonical request and the hits, as serialised and as the
//! published output schema describes them.

use schemars::JsonSchema;
use serde::Serialize;

use crate::tools::project::Project;
use crate::vocab::EventType;

/// The canonical request: trimmed query, defaults applied, event types deduplicated in
/// canonical order.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct SearchRequest {
    pub query: String,
    pub within_id: Option<String>,
    pub event_types: Vec<EventType>,
    pub n_hits: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_datetime: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_datetime: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct SearchData {
    pub result_count: u32,
    pub limit: u32,
    /// More matches exist beyond `limit`.
    pub truncated: bool,
    pub results: Vec<Hit>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Hit {
    pub rank: u32,
    /// Relevance in 0.0–1.0, comparable within one response only.
    pub score: f64,
    pub id: String,
    pub event: HitEvent,
    pub turn: HitTurn,
    pub session: SessionBrief,
    pub snippet: Snippet,
    pub open: OpenRefs,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct HitEvent {
    pub id: String,
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub timestamp: String,
    pub ordinal: u32,
    pub terminal: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct HitTurn {
    pub id: String,
    pub ordinal: u32,
    pub completed: bool,
    pub event_count: u32,
}

/// Session metadata as shown on a hit.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct SessionBrief {
    pub id: String,
    pub title: String,
    pub source: String,
    /// The repository the session worked in, from the working directory its log records.
    pub project: Option<Project>,
    pub harness: String,
    pub started_at: String,
    pub updated_at: String,
    pub completed: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Snippet {
    pub text: String,
    /// The snippet is not the event's full text.
    pub truncated: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct OpenRefs {
    pub event_id: String,
    pub turn_id: String,
    pub session_id: String,
}
