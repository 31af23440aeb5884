//! `list_sessions`' statement, its fixed fragments (`«name»` markers) and its rows.

use serde::Deserialize;

/// A page of sessions overlapping the window, with the count of all that match (which picks the
/// SLA row). `«filters»` and `«after»` are fixed fragments, `«dir»` the sort keyword.
pub(super) const LIST_SQL: &str = "
WITH (SELECT count() FROM sessions FINAL
      WHERE updated_at >= {start:DateTime64(3, 'UTC')} AND started_at < {end:DateTime64(3, 'UTC')} «filters») AS matching_count
SELECT session_key, title, harness, source, cwd, started_at, updated_at, completed, turn_count, event_count, mode,
       slug, summary, toUInt64(assumeNotNull(matching_count)) AS matching
FROM sessions FINAL
WHERE updated_at >= {start:DateTime64(3, 'UTC')} AND started_at < {end:DateTime64(3, 'UTC')} «filters» «after»
ORDER BY updated_at «dir», session_key «dir»
LIMIT {limit:UInt32}";

pub(super) const FILTER_MODE: &str = "AND mode = {mode:String}";
pub(super) const FILTER_HARNESS: &str = "AND harness = {harness:String}";
pub(super) const FILTER_SOURCE: &str = "AND source = {source:String}";
/// Only a project's sessions (see `ProjectMatch`).
pub(super) const FILTER_PROJECT: &str =
    concat!("AND ", crate::tools::project::project_condition!());
/// Only sessions the caller may see (see `Visibility`).
pub(super) const FILTER_VISIBLE: &str = "AND source IN {visible:Array(String)}";
pub(super) const AFTER_DESC: &str =
    "AND (updated_at, session_key) < ({after_ts:DateTime64(3, 'UTC')}, {after_key:UInt64})";
pub(super) const AFTER_ASC: &str =
    "AND (updated_at, session_key) > ({after_ts:DateTime64(3, 'UTC')}, {after_key:UInt64})";

/// One listed session, with the number of sessions matching the whole window.
#[derive(Debug, clickhouse::Row, Deserialize)]
pub(super) struct Row {
    pub session_key: u64,
    pub title: String,
    pub harness: String,
    pub source: String,
    pub cwd: String,
    pub started_at: i64,
    pub updated_at: i64,
    pub completed: bool,
    pub turn_count: u32,
    pub event_count: u32,
    pub mode: String,
    pub slug: String,
    pub summary: String,
    pub matching: u64,
}
