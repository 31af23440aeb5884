//! The three MCP tools: every call is validated against the published input schema, dispatched,
//! wrapped in the spec's envelope with its performance block, counted and timed.

pub mod envelope;
pub mod list;
pub mod open;
pub mod querylog;
pub mod render;
pub mod schema;
pub mod search;
pub mod snippet;
pub mod stats;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::config::Config;
use crate::db::Db;
use envelope::{ErrorEnvelope, Performance, ToolError};
use schema::InputValidator;

/// What the tools share: the database, the configuration and a little cached state.
pub struct Context {
    pub db: Db,
    pub config: Arc<Config>,
    /// BM25 statistics, cached briefly; also the corpus size that picks the global-search SLA row.
    pub stats: stats::Statistics,
    cursor_key: tokio::sync::OnceCell<Vec<u8>>,
}

impl Context {
    pub fn new(db: Db, config: Arc<Config>) -> Self {
        Self {
            db,
            config,
            stats: stats::Statistics::default(),
            cursor_key: tokio::sync::OnceCell::new(),
        }
    }

    /// The key list_sessions cursors are signed with, shared through the database so every
    /// instance accepts every other instance's cursors.
    async fn cursor_key(&self) -> Result<Vec<u8>, ToolError> {
        let key = self
            .cursor_key
            .get_or_try_init(|| async {
                let deadline =
                    Instant::now() + Duration::from_millis(self.config.tools.list_deadline_ms);
                let key: Option<String> = self
                    .db
                    .read(
                        "cursor_key",
                        "SELECT key FROM service_keys FINAL WHERE name = 'cursor'",
                    )
                    .fetch_optional(&self.db, deadline)
                    .await
                    .map_err(|e| ToolError::from_db(e, self.config.tools.list_deadline_ms))?;
                key.map(String::into_bytes)
                    .filter(|k| !k.is_empty())
                    .ok_or_else(|| {
                        ToolError::Internal("the cursor key is missing; run migrate".into())
                    })
            })
            .await?;
        Ok(key.clone())
    }
}

/// A tool's successful answer, before the envelope's performance block is added.
pub struct Success {
    schema_version: &'static str,
    request: Value,
    data: Value,
    warnings: Vec<String>,
    sla_target_ms: u64,
    text: String,
}

impl Success {
    pub fn new<R: Serialize, D: Serialize>(
        schema_version: &'static str,
        request: &R,
        data: &D,
        warnings: Vec<String>,
        sla_target_ms: u64,
        text: String,
    ) -> Self {
        Self {
            schema_version,
            request: serde_json::to_value(request).expect("requests serialise"),
            data: serde_json::to_value(data).expect("responses serialise"),
            warnings,
            sla_target_ms,
            text,
        }
    }
}

/// The tool set: published definitions, validators and the dispatcher.
pub struct Tools {
    ctx: Context,
    published: Vec<Tool>,
    search_input: InputValidator,
    list_input: InputValidator,
    open_input: InputValidator,
    query_log: querylog::QueryLog,
}

/// The server's description of itself, sent in `initialize`.
pub const INSTRUCTIONS: &str = "moraine-mcp remembers past AI coding-agent sessions (Codex, Claude Code). \
Use search_sessions to find events by words (it returns handles and snippets, not payloads), \
list_sessions to browse sessions by time window, and open with any returned ID to expand a \
session, turn or event; follow the traversal IDs in open's answers to move around.";

impl Tools {
    pub fn new(db: Db, config: Arc<Config>, query_log: querylog::QueryLog) -> Self {
        Self {
            published: definitions(),
            search_input: InputValidator::new(&schema::search_input(), &["within_id"]),
            list_input: InputValidator::new(&schema::list_input(), &[]),
            open_input: InputValidator::new(&schema::open_input(), &["id"]),
            ctx: Context::new(db, config),
            query_log,
        }
    }

    /// The tools as published in `tools/list`.
    pub fn published(&self) -> &[Tool] {
        &self.published
    }

    /// Runs a tool call; `None` when there is no such tool. `client` names the caller (a token
    /// name) for the query log.
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        client: &str,
    ) -> Option<CallToolResult> {
        let started = Instant::now();
        let config = &self.ctx.config;
        let (validator, deadline_ms, default_target) = match name {
            search::NAME => (
                &self.search_input,
                config.tools.search_deadline_ms,
                config.sla.search_100k,
            ),
            list::NAME => (
                &self.list_input,
                config.tools.list_deadline_ms,
                config.sla.list_typical,
            ),
            open::NAME => (
                &self.open_input,
                config.tools.open_deadline_ms,
                config.sla.open_event,
            ),
            _ => return None,
        };
        // Validated as the JSON value it arrived as, without copying it.
        let arguments = Value::Object(arguments.unwrap_or_default());
        let checked = validator.check(&arguments);
        let Value::Object(arguments) = arguments else {
            unreachable!("built as an object")
        };
        let deadline = started + Duration::from_millis(deadline_ms);
        let outcome = match checked {
            Err(error) => Err(error),
            Ok(()) => {
                let work = async {
                    match name {
                        search::NAME => search::run(&self.ctx, &arguments, deadline).await,
                        list::NAME => list::run(&self.ctx, &arguments, deadline).await,
                        _ => open::run(&self.ctx, &arguments, deadline).await,
                    }
                };
                tokio::time::timeout_at(deadline.into(), work)
                    .await
                    .unwrap_or(Err(ToolError::Deadline { deadline_ms }))
            }
        };
        // One clock reading for both the envelope and the latency metric.
        let finish = |sla_target_ms: u64, outcome: &str| {
            let elapsed = started.elapsed();
            let elapsed_ms = elapsed.as_millis() as u64;
            let met_sla = elapsed_ms <= sla_target_ms;
            self.ctx
                .db
                .metrics()
                .observe_tool(name, outcome, elapsed.as_secs_f64(), met_sla);
            Performance {
                elapsed_ms,
                sla_target_ms,
                met_sla,
            }
        };
        Some(match outcome {
            Ok(success) => {
                let performance = finish(success.sla_target_ms, "ok");
                if name == search::NAME {
                    self.log_search(&success, &performance, client);
                }
                let envelope = json!({
                    "schema_version": success.schema_version,
                    "tool": name,
                    "request": success.request,
                    "data": success.data,
                    "warnings": success.warnings,
                    "performance": performance,
                });
                let mut result = CallToolResult::success(vec![ContentBlock::text(success.text)]);
                result.structured_content = Some(envelope);
                result
            }
            Err(error) => {
                let body = error.body();
                match &error {
                    ToolError::Backend(detail) | ToolError::Internal(detail) => {
                        tracing::warn!(tool = name, code = body.code.as_str(), %detail, "tool call failed");
                    }
                    _ => {
                        tracing::debug!(tool = name, code = body.code.as_str(), message = %body.message, "tool call rejected")
                    }
                }
                let performance = finish(default_target, body.code.as_str());
                let text = render::error(name, &body);
                let envelope = ErrorEnvelope {
                    schema_version: "moraine.mcp.error.v1".into(),
                    tool: name.into(),
                    request: arguments,
                    error: body,
                    warnings: Vec::new(),
                    performance,
                };
                let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
                result.structured_content =
                    Some(serde_json::to_value(envelope).expect("envelopes serialise"));
                result
            }
        })
    }

    fn log_search(&self, success: &Success, performance: &Performance, client: &str) {
        let request = &success.request;
        let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
        let query_id = uuid::Uuid::new_v4().to_string();
        let ts = time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64 / 1_000_000;
        let results = success.data["results"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        let hits = results
            .iter()
            .map(|hit| querylog::HitRow {
                ts,
                query_id: query_id.clone(),
                rank: hit["rank"].as_u64().unwrap_or(0) as u8,
                score: hit["score"].as_f64().unwrap_or(0.0) as f32,
                event_id: text(&hit["id"]),
                session_id: text(&hit["session"]["id"]),
            })
            .collect();
        let event_types = request["event_types"]
            .as_array()
            .map(|types| types.iter().map(text).collect())
            .unwrap_or_default();
        self.query_log.record(querylog::Entry {
            query: querylog::QueryRow {
                ts,
                query_id,
                query: text(&request["query"]),
                within_id: text(&request["within_id"]),
                event_types,
                harness: text(&request["harness"]),
                source: text(&request["source"]),
                n_hits: request["n_hits"].as_u64().unwrap_or(0) as u8,
                result_count: results.len() as u8,
                truncated: success.data["truncated"].as_bool().unwrap_or(false),
                terms: crate::tokenize::query_terms(request["query"].as_str().unwrap_or("")).len()
                    as u16,
                corpus_docs: self.ctx.stats.documents(),
                elapsed_ms: performance.elapsed_ms as u32,
                met_sla: performance.met_sla,
                client: client.to_owned(),
            },
            hits,
        });
    }
}

/// The published tool definitions.
pub fn definitions() -> Vec<Tool> {
    let read_only = || {
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false)
    };
    vec![
        Tool::new(
            search::NAME,
            "Find events in past agent sessions by words (BM25). Returns ranked handles with short \
             snippets and the event, turn and session IDs to pass to `open`; never full payloads. \
             Default event types: user_input, assistant_response, tool_response.",
            schema::as_object(schema::search_input()),
        )
        .with_title("Search sessions")
        .with_raw_output_schema(schema::as_object(schema::output::<search::SearchEnvelope>()))
        .with_annotations(read_only()),
        Tool::new(
            list::NAME,
            "List sessions overlapping a time window (updated at or after start, started before end), \
             newest first by default, with cursor pagination. Metadata only.",
            schema::as_object(schema::list_input()),
        )
        .with_title("List sessions")
        .with_raw_output_schema(schema::as_object(schema::output::<list::ListEnvelope>()))
        .with_annotations(read_only()),
        Tool::new(
            open::NAME,
            "Expand a session:, turn: or event: ID into structured context: a session's turns, a \
             turn's events, or an event's full content, with IDs of parents and neighbours.",
            schema::as_object(schema::open_input()),
        )
        .with_title("Open a session, turn or event")
        .with_raw_output_schema(schema::as_object(schema::output::<open::OpenEnvelope>()))
        .with_annotations(read_only()),
    ]
}

/// RFC 3339 UTC with milliseconds, as the spec shows (`2026-04-29T18:42:31.125Z`).
pub fn format_ts(ms: i64) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        at.year(),
        at.month() as u8,
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.millisecond()
    )
}

/// A string argument; JSON null and absence are both `None`.
pub fn optional_str(args: &Map<String, Value>, key: &str) -> Option<String> {
    args.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// An integer argument. JSON Schema counts `10.0` as an integer, so it is accepted as 10.
pub fn optional_u64(args: &Map<String, Value>, key: &str) -> Option<u64> {
    let value = args.get(key)?;
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0)
            .map(|f| f as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_format_ts() {
        assert_eq!(format_ts(1_777_488_151_125), "2026-04-29T18:42:31.125Z");
        assert_eq!(format_ts(0), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn test_published_schemas_compile_and_are_objects() {
        for tool in definitions() {
            assert_eq!(tool.input_schema["type"], "object");
            let output = Value::Object(tool.output_schema.clone().unwrap().as_ref().clone());
            assert_eq!(output["type"], "object");
            jsonschema::validator_for(&output).unwrap();
            assert_eq!(tool.annotations.unwrap().read_only_hint, Some(true));
        }
    }
}
