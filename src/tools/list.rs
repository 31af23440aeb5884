//! `list_sessions`: sessions overlapping a time window, newest (or oldest) first, with keyset
//! pagination through a signed cursor bound to the window, filters and sort.

mod cursor;

pub(crate) use cursor::check_untrusted as check_untrusted_cursor;
mod render;
mod sql;
pub(crate) mod wire;

use std::time::Instant;

use jsonschema::error::ValidationErrorKind;
use serde::Deserialize;
use serde_json::{Value, json};

use super::context::{Answer, Budget, Context, Tool, Visibility, optional_integer};
use super::envelope::ToolError;
use super::project::{self, Project, ProjectMatch};
use super::schema::{self, DATETIME_PATTERN, InputRules};
use crate::config::Config;
use crate::ids;
use crate::text::{db_time, format_ts, rfc3339_ms};
use crate::vocab::SessionMode;
use cursor::CursorBody;
use wire::{ListData, ListRequest, ListedSession, SessionMeta, SessionRef, SortOrder};

const MAX_LIST_LIMIT: u64 = 50;
const DEFAULT_LIMIT: u32 = 20;
/// Longest accepted cursor.
const MAX_CURSOR_CHARS: u64 = 1024;
/// Above this many matching sessions a window is "broad" (the spec's SLA table).
const TYPICAL_MATCHES: u64 = 5000;

/// The `list_sessions` tool.
pub(crate) struct ListSessions;

/// The arguments, as the published schema accepted them.
#[derive(Debug, Deserialize)]
pub(crate) struct Args {
    start_datetime: String,
    end_datetime: String,
    #[serde(default, deserialize_with = "optional_integer")]
    limit: Option<u32>,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    mode: Option<SessionMode>,
    #[serde(default)]
    sort: Option<SortOrder>,
    #[serde(default)]
    harness: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    project: Option<String>,
}

impl Args {
    fn canonical(self) -> ListRequest {
        ListRequest {
            start_datetime: self.start_datetime,
            end_datetime: self.end_datetime,
            limit: self.limit.unwrap_or(DEFAULT_LIMIT),
            cursor: self.cursor,
            mode: self.mode,
            sort: self.sort.unwrap_or_default(),
            harness: self.harness,
            source: self.source,
            project: self.project,
        }
    }
}

impl Tool for ListSessions {
    const NAME: &'static str = "list_sessions";
    const TITLE: &'static str = "List sessions";
    const DESCRIPTION: &'static str = "List sessions overlapping a time window (updated at or after start, started before end), \
             newest first by default, with cursor pagination. Metadata only.";
    const SCHEMA_VERSION: &'static str = "moraine.mcp.list_sessions.v1";

    type Args = Args;
    type Request = ListRequest;
    type Data = ListData;

    fn input_schema() -> Value {
        let modes: Vec<Value> = SessionMode::ALL
            .iter()
            .map(|m| json!(m.as_str()))
            .chain([Value::Null])
            .collect();
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["start_datetime", "end_datetime"],
            "properties": {
                "start_datetime": {
                    "type": "string",
                    "pattern": DATETIME_PATTERN,
                    "description": "Inclusive start, RFC 3339 with Z or an offset. Sessions updated at or after it match."
                },
                "end_datetime": {
                    "type": "string",
                    "pattern": DATETIME_PATTERN,
                    "description": "Exclusive end, RFC 3339 with Z or an offset. Sessions started before it match."
                },
                "limit": {
                    "type": ["integer", "null"],
                    "minimum": 1,
                    "maximum": MAX_LIST_LIMIT,
                    "description": "Sessions per page, 1–50. Default 20."
                },
                "cursor": {
                    "type": ["string", "null"],
                    "maxLength": MAX_CURSOR_CHARS,
                    "description": "next_cursor from the previous page of the same request."
                },
                "mode": {
                    "type": ["string", "null"],
                    "enum": modes,
                    "description": "Only sessions of this mode."
                },
                "sort": {
                    "type": ["string", "null"],
                    "enum": ["desc", "asc", null],
                    "description": "By updated_at, then session ID. Default desc (newest first)."
                },
                "harness": schema::harness_filter(),
                "source": schema::name_filter("source name"),
                "project": project::filter_schema(),
            }
        })
    }

    fn input_rules() -> InputRules {
        InputRules {
            id_fields: &[],
            special: schema::no_special,
            message: |field, _kind: &ValidationErrorKind| {
                Some(match field {
                    "limit" => format!("limit must be an integer between 1 and {MAX_LIST_LIMIT}"),
                    "start_datetime" | "end_datetime" => format!(
                        "{field} must be an RFC 3339 datetime with an explicit timezone offset or Z"
                    ),
                    "mode" => {
                        "mode must be one of web_search, mcp_internal, tool_calling, chat".into()
                    }
                    "sort" => "sort must be asc or desc".into(),
                    "cursor" => "cursor must be a next_cursor returned by list_sessions".into(),
                    "harness" | "source" => schema::name_filter_message(field),
                    "project" => project::filter_message(),
                    _ => return None,
                })
            },
        }
    }

    fn budget(config: &Config) -> Budget {
        Budget {
            deadline_ms: config.tools.list_deadline_ms,
            fallback_sla_ms: config.sla.list_typical,
        }
    }

    async fn run(
        ctx: &Context,
        visible: &Visibility,
        args: Args,
        deadline: Instant,
    ) -> Result<Answer<Self>, ToolError> {
        let request = args.canonical();
        let start = parse_datetime("start_datetime", &request.start_datetime)?;
        let end = parse_datetime("end_datetime", &request.end_datetime)?;
        if end <= start {
            return Err(ToolError::invalid(
                "end_datetime",
                "end_datetime must be later than start_datetime",
            ));
        }
        let fingerprint = cursor::fingerprint(&request, visible, start, end);
        let key = ctx.cursor_key().await?;
        let after = match &request.cursor {
            None => None,
            Some(token) => Some(cursor::verify(key, token, &fingerprint)?),
        };
        let rows = page(ctx, visible, &request, start, end, after.as_ref(), deadline).await?;

        let matching = rows.first().map_or(0, |r| r.matching);
        let truncated = rows.len() > request.limit as usize;
        let page = &rows[..rows.len().min(request.limit as usize)];
        let offset = after.as_ref().map_or(0, |c| c.n);
        let sessions: Vec<ListedSession> = page
            .iter()
            .enumerate()
            .map(|(i, row)| listed(offset + i as u32 + 1, row))
            .collect();
        let next_cursor = match (truncated, page.last()) {
            (true, Some(last)) => Some(cursor::sign(
                key,
                &CursorBody {
                    v: 1,
                    f: fingerprint,
                    t: last.updated_at,
                    k: last.session_key,
                    n: offset + page.len() as u32,
                },
            )),
            _ => None,
        };
        let sla = &ctx.config.sla;
        let sla_target_ms = match (matching > TYPICAL_MATCHES, request.mode.is_some()) {
            (false, _) => sla.list_typical,
            (true, false) => sla.list_broad,
            (true, true) => sla.list_broad_mode,
        };
        let data = ListData {
            result_count: sessions.len() as u32,
            limit: request.limit,
            truncated,
            sessions,
            next_cursor,
        };
        Ok(Answer {
            request,
            data,
            warnings: Vec::new(),
            sla_target_ms,
        })
    }

    fn render(answer: &Answer<Self>) -> String {
        render::text(&answer.request, &answer.data)
    }
}

/// One page (plus one row, to tell whether more follow), after the cursor's position.
async fn page(
    ctx: &Context,
    visible: &Visibility,
    request: &ListRequest,
    start: i64,
    end: i64,
    after: Option<&CursorBody>,
    deadline: Instant,
) -> Result<Vec<sql::Row>, ToolError> {
    let filters: Vec<&str> = [
        (request.mode.is_some(), sql::FILTER_MODE),
        (request.harness.is_some(), sql::FILTER_HARNESS),
        (request.source.is_some(), sql::FILTER_SOURCE),
        (request.project.is_some(), sql::FILTER_PROJECT),
        (visible != &Visibility::All, sql::FILTER_VISIBLE),
    ]
    .into_iter()
    .filter_map(|(present, fragment)| present.then_some(fragment))
    .collect();
    let after_sql = match (after, request.sort) {
        (None, _) => "",
        (Some(_), SortOrder::Asc) => sql::AFTER_ASC,
        (Some(_), SortOrder::Desc) => sql::AFTER_DESC,
    };
    let statement = crate::db::splice(
        sql::LIST_SQL,
        &[
            ("filters", &filters.join(" ")),
            ("after", after_sql),
            ("dir", request.sort.sql()),
        ],
    );
    let project = ProjectMatch::of(request.project.as_deref());
    let rows = ctx
        .db
        .read("list_sessions", &statement)
        .param("start", db_time(start))
        .param("end", db_time(end))
        .param("mode", request.mode.map_or("", SessionMode::as_str))
        .param("harness", request.harness.as_deref().unwrap_or(""))
        .param("source", request.source.as_deref().unwrap_or(""))
        .param("project_prefix", &project.prefix)
        .param("project_suffix", &project.suffix)
        .param("visible", visible.sources())
        .param("after_ts", db_time(after.map_or(0, |c| c.t)))
        .param("after_key", after.map_or(0, |c| c.k))
        .param("limit", request.limit + 1)
        .fetch_all(&ctx.db, deadline)
        .await?;
    Ok(rows)
}

fn listed(rank: u32, row: &sql::Row) -> ListedSession {
    let id = ids::session_id(row.session_key);
    ListedSession {
        rank,
        id: id.clone(),
        session: SessionMeta {
            id: id.clone(),
            title: row.title.clone(),
            source: row.source.clone(),
            project: Project::of(&row.cwd),
            harness: row.harness.clone(),
            started_at: format_ts(row.started_at),
            updated_at: format_ts(row.updated_at),
            completed: row.completed,
            turn_count: row.turn_count,
            event_count: row.event_count,
            mode: row.mode.clone(),
            session_slug: Some(row.slug.clone()).filter(|s| !s.is_empty()),
            session_summary: Some(row.summary.clone()).filter(|s| !s.is_empty()),
        },
        open: SessionRef { session_id: id },
    }
}

/// Parses an RFC 3339 datetime (the schema already required an explicit offset) to epoch ms.
fn parse_datetime(field: &str, text: &str) -> Result<i64, ToolError> {
    rfc3339_ms(text).ok_or_else(|| {
        ToolError::invalid(field, format!("{field} is not a valid RFC 3339 datetime"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_canonical_request_applies_defaults_and_reads_closed_sets() {
        let window = json!({"start_datetime": "2026-04-30T09:00:00Z", "end_datetime": "2026-04-30T13:00:00Z"});
        let request = serde_json::from_value::<Args>(window.clone())
            .unwrap()
            .canonical();
        assert_eq!(
            (request.limit, request.sort, request.mode),
            (20, SortOrder::Desc, None)
        );
        let mut args = window;
        args["mode"] = json!("web_search");
        args["sort"] = json!("asc");
        args["limit"] = json!(7.0);
        let request = serde_json::from_value::<Args>(args).unwrap().canonical();
        assert_eq!(request.limit, 7);
        assert_eq!(request.sort, SortOrder::Asc);
        assert_eq!(request.mode, Some(SessionMode::WebSearch));
        let echoed = serde_json::to_value(&request).unwrap();
        assert_eq!(echoed["mode"], "web_search");
        assert_eq!(echoed["sort"], "asc");
    }
}
