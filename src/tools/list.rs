//! `list_sessions`: sessions overlapping a time window, newest (or oldest) first, with keyset
//! pagination through a signed cursor bound to the window, filters and sort.

use std::time::Instant;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::Sha256;

use super::envelope::{Envelope, ToolError};
use super::{Context, Success, format_ts, optional_str, optional_u64};
use crate::ids;

pub const NAME: &str = "list_sessions";
pub const SCHEMA_VERSION: &str = "moraine.mcp.list_sessions.v1";
const DEFAULT_LIMIT: u32 = 20;
/// Above this many matching sessions a window is "broad" (the spec's SLA table).
const TYPICAL_MATCHES: u64 = 5000;

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ListRequest {
    pub start_datetime: String,
    pub end_datetime: String,
    pub limit: u32,
    pub cursor: Option<String>,
    pub mode: Option<String>,
    pub sort: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ListData {
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
pub struct ListedSession {
    /// Position in the whole listing, across pages (1-based).
    pub rank: u32,
    pub id: String,
    pub session: SessionMeta,
    pub open: SessionRef,
}

/// Compact session metadata: no text from the session's events.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SessionMeta {
    pub id: String,
    pub title: String,
    pub source: String,
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
pub struct SessionRef {
    pub session_id: String,
}

pub type ListEnvelope = Envelope<ListRequest, ListData>;

#[derive(Debug, clickhouse::Row, Deserialize)]
struct Row {
    session_key: u64,
    title: String,
    harness: String,
    source: String,
    started_at: i64,
    updated_at: i64,
    completed: bool,
    turn_count: u32,
    event_count: u32,
    mode: String,
    slug: String,
    summary: String,
    matching: u64,
}

/// Filters shared by the page and the count; `{filters}` and `{after}` are fixed fragments.
const LIST_SQL: &str = "
WITH (SELECT count() FROM sessions FINAL
      WHERE updated_at >= {start:DateTime64(3, 'UTC')} AND started_at < {end:DateTime64(3, 'UTC')} {filters}) AS matching_count
SELECT session_key, title, harness, source, started_at, updated_at, completed, turn_count, event_count, mode,
       slug, summary, toUInt64(assumeNotNull(matching_count)) AS matching
FROM sessions FINAL
WHERE updated_at >= {start:DateTime64(3, 'UTC')} AND started_at < {end:DateTime64(3, 'UTC')} {filters} {after}
ORDER BY updated_at {dir}, session_key {dir}
LIMIT {limit:UInt32}";

const FILTER_MODE: &str = "AND mode = {mode:String}";
const FILTER_HARNESS: &str = "AND harness = {harness:String}";
const FILTER_SOURCE: &str = "AND source = {source:String}";
const AFTER_DESC: &str =
    "AND (updated_at, session_key) < ({after_ts:DateTime64(3, 'UTC')}, {after_key:UInt64})";
const AFTER_ASC: &str =
    "AND (updated_at, session_key) > ({after_ts:DateTime64(3, 'UTC')}, {after_key:UInt64})";

/// Where the previous page ended, signed so it cannot be forged or reused with other filters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct CursorBody {
    /// Version of this format.
    v: u8,
    /// Fingerprint of the window, filters and sort the cursor belongs to.
    f: String,
    /// updated_at (ms) and session key of the last session returned.
    t: i64,
    k: u64,
    /// Sessions returned so far (ranks continue from here).
    n: u32,
}

pub fn canonical(args: &Map<String, Value>) -> ListRequest {
    ListRequest {
        start_datetime: optional_str(args, "start_datetime").unwrap_or_default(),
        end_datetime: optional_str(args, "end_datetime").unwrap_or_default(),
        limit: optional_u64(args, "limit").map_or(DEFAULT_LIMIT, |n| n as u32),
        cursor: optional_str(args, "cursor"),
        mode: optional_str(args, "mode"),
        sort: optional_str(args, "sort").unwrap_or_else(|| "desc".into()),
        harness: optional_str(args, "harness"),
        source: optional_str(args, "source"),
    }
}

pub async fn run(
    ctx: &Context,
    args: &Map<String, Value>,
    deadline: Instant,
) -> Result<Success, ToolError> {
    let request = canonical(args);
    let start = parse_datetime("start_datetime", &request.start_datetime)?;
    let end = parse_datetime("end_datetime", &request.end_datetime)?;
    if end <= start {
        return Err(ToolError::invalid(
            "end_datetime",
            "end_datetime must be later than start_datetime",
        ));
    }
    let fingerprint = fingerprint(&request, start, end);
    let key = ctx.cursor_key().await?;
    let after = match &request.cursor {
        None => None,
        Some(token) => Some(verify_cursor(&key, token, &fingerprint)?),
    };
    let ascending = request.sort == "asc";
    let mut filters = String::new();
    for (present, fragment) in [
        (request.mode.is_some(), FILTER_MODE),
        (request.harness.is_some(), FILTER_HARNESS),
        (request.source.is_some(), FILTER_SOURCE),
    ] {
        if present {
            filters.push(' ');
            filters.push_str(fragment);
        }
    }
    let after_sql = match (&after, ascending) {
        (None, _) => "",
        (Some(_), true) => AFTER_ASC,
        (Some(_), false) => AFTER_DESC,
    };
    let sql = LIST_SQL
        .replace("{filters}", &filters)
        .replace("{after}", after_sql)
        .replace("{dir}", if ascending { "ASC" } else { "DESC" });
    let rows: Vec<Row> = ctx
        .db
        .read("list_sessions", &sql)
        .param("start", db_time(start))
        .param("end", db_time(end))
        .param("mode", request.mode.as_deref().unwrap_or(""))
        .param("harness", request.harness.as_deref().unwrap_or(""))
        .param("source", request.source.as_deref().unwrap_or(""))
        .param("after_ts", db_time(after.as_ref().map_or(0, |c| c.t)))
        .param("after_key", after.as_ref().map_or(0, |c| c.k))
        .param("limit", request.limit + 1)
        .fetch_all(&ctx.db, deadline)
        .await
        .map_err(|e| ToolError::from_db(e, ctx.config.tools.list_deadline_ms))?;

    let matching = rows.first().map_or(0, |r| r.matching);
    let truncated = rows.len() > request.limit as usize;
    let page = &rows[..rows.len().min(request.limit as usize)];
    let offset = after.as_ref().map_or(0, |c| c.n);
    let sessions: Vec<ListedSession> = page
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let id = ids::session_id(row.session_key);
            ListedSession {
                rank: offset + i as u32 + 1,
                id: id.clone(),
                session: SessionMeta {
                    id: id.clone(),
                    title: row.title.clone(),
                    source: row.source.clone(),
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
        })
        .collect();
    let next_cursor = match (truncated, page.last()) {
        (true, Some(last)) => Some(sign_cursor(
            &key,
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
    let text = super::render::list(&request, &data);
    Ok(Success::new(
        SCHEMA_VERSION,
        &request,
        &data,
        Vec::new(),
        sla_target_ms,
        text,
    ))
}

/// Parses an RFC 3339 datetime (the schema already required an explicit offset) to epoch ms.
fn parse_datetime(field: &str, text: &str) -> Result<i64, ToolError> {
    crate::ingest::draft::rfc3339_ms(text).ok_or_else(|| {
        ToolError::invalid(field, format!("{field} is not a valid RFC 3339 datetime"))
    })
}

/// Epoch milliseconds as a `DateTime64(3)` parameter (decimal seconds), clamped to the type's
/// range (1900–2299) so far-off but valid datetimes still compare correctly.
fn db_time(ms: i64) -> String {
    const MIN: i64 = -2_208_988_800_000; // 1900-01-01T00:00:00Z
    const MAX: i64 = 10_413_791_999_999; // 2299-12-31T23:59:59.999Z
    let ms = ms.clamp(MIN, MAX);
    let sign = if ms < 0 { "-" } else { "" };
    format!(
        "{sign}{}.{:03}",
        ms.unsigned_abs() / 1000,
        ms.unsigned_abs() % 1000
    )
}

/// Binds a cursor to the instants (not the spelling) of the window, and to filters and sort.
fn fingerprint(request: &ListRequest, start: i64, end: i64) -> String {
    let canonical = serde_json::json!([
        start,
        end,
        request.mode,
        request.sort,
        request.harness,
        request.source
    ]);
    let digest = <Sha256 as sha2::Digest>::digest(canonical.to_string().as_bytes());
    URL_SAFE_NO_PAD.encode(&digest[..12])
}

fn sign_cursor(key: &[u8], body: &CursorBody) -> String {
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(body).expect("cursor serialises"));
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    mac.update(payload.as_bytes());
    let tag = URL_SAFE_NO_PAD.encode(&mac.finalize().into_bytes()[..16]);
    format!("{payload}.{tag}")
}

fn verify_cursor(key: &[u8], token: &str, fingerprint: &str) -> Result<CursorBody, ToolError> {
    let invalid = || {
        ToolError::invalid(
            "cursor",
            "cursor is not a next_cursor issued by this server",
        )
    };
    let (payload, tag) = token.split_once('.').ok_or_else(invalid)?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    mac.update(payload.as_bytes());
    mac.verify_truncated_left(&tag).map_err(|_| invalid())?;
    let body: CursorBody = URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(invalid)?;
    if body.v != 1 {
        return Err(invalid());
    }
    if body.f != fingerprint {
        return Err(ToolError::invalid(
            "cursor",
            "cursor belongs to a request with a different window, filter or sort",
        ));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> CursorBody {
        CursorBody {
            v: 1,
            f: "abc".into(),
            t: 5,
            k: 7,
            n: 20,
        }
    }

    #[test]
    fn test_cursor_round_trip_and_tamper_evidence() {
        let token = sign_cursor(b"key", &body());
        assert_eq!(verify_cursor(b"key", &token, "abc").unwrap(), body());
        assert!(verify_cursor(b"other", &token, "abc").is_err());
        assert!(
            verify_cursor(b"key", &token, "xyz")
                .unwrap_err()
                .to_string()
                .contains("different")
        );
        let (payload, tag) = token.split_once('.').unwrap();
        let mut forged = body();
        forged.n = 0;
        let forged_payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        assert!(verify_cursor(b"key", &format!("{forged_payload}.{tag}"), "abc").is_err());
        assert!(verify_cursor(b"key", payload, "abc").is_err());
        assert!(verify_cursor(b"key", "garbage", "abc").is_err());
    }

    #[test]
    fn test_fingerprint_uses_instants_not_spelling() {
        let mut a = canonical(&serde_json::from_str(r#"{"start_datetime":"2026-04-30T09:00:00-04:00","end_datetime":"2026-04-30T13:00:00Z"}"#).unwrap());
        let start = parse_datetime("start_datetime", &a.start_datetime).unwrap();
        let end = parse_datetime("end_datetime", &a.end_datetime).unwrap();
        let f1 = fingerprint(&a, start, end);
        a.start_datetime = "2026-04-30T13:00:00Z".into();
        let start2 = parse_datetime("start_datetime", &a.start_datetime).unwrap();
        assert_eq!(start, start2);
        assert_eq!(f1, fingerprint(&a, start2, end));
        a.sort = "asc".into();
        assert_ne!(f1, fingerprint(&a, start2, end));
    }
}
