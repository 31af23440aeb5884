//! `list_sessions` on the wire: the canonical request and the page of sessions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::project::Project;
use crate::vocab::SessionMode;

/// The listing order: by `updated_at`, then session ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SortOrder {
    /// Newest first (the default).
    #[default]
    Desc,
    Asc,
}

impl SortOrder {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Desc => "desc",
            Self::Asc => "asc",
        }
    }

    /// The SQL keyword.
    pub(crate) fn sql(self) -> &'static str {
        match self {
            Self::Desc => "DESC",
            Self::Asc => "ASC",
        }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct ListRequest {
    pub start_datetime: String,
    pub end_datetime: String,
    pub limit: u32,
    pub cursor: Option<String>,
    #[schemars(with = "Option<String>")]
    pub mode: Option<SessionMode>,
    #[schemars(with = "String")]
    pub sort: SortOrder,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct ListData {
    pub result_count: u32,
    pub limit: u32,
    /// More sessions match beyond this page.
    pub truncated: bool,
    pub sessions: Vec<ListedSession>,
    /// Pass as `cursor` (with the same window, filters and sort) for the next page.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct ListedSession {
    /// Position in the whole listing, across pages (1-based).
    pub rank: u32,
    pub id: String,
    pub session: SessionMeta,
    pub open: SessionRef,
}

/// Compact session metadata: no text from the session's events.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct SessionMeta {
    pub id: String,
    pub title: String,
    pub source: String,
    /// The repository the session worked in, from the working directory its log records.
    pub project: Option<Project>,
    pub harness: String,
    pub started_at: String,
    pub updated_at: String,
    pub completed: bool,
    pub turn_count: u32,
    pub event_count: u32,
    pub mode: String,
    pub session_slug: Option<String>,
    pub session_summary: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct SessionRef {
    pub session_id: String,
}
