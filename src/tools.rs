//! The MCP tools. A call is parsed into a [`ToolCall`] (validated against the published input
//! schema, then read into the tool's typed arguments), applied under the tool's deadline, and
//! answered with the spec's envelope and performance block, counted and timed.
//!
//! Each tool is one module implementing [`context::Tool`]; adding a tool adds a module and a
//! variant of [`ToolCall`] (with its line in `parse` and `apply`).

pub(crate) mod context;
pub(crate) mod envelope;
pub(crate) mod list;
pub(crate) mod open;
pub(crate) mod project;
pub(crate) mod querylog;
pub(crate) mod schema;
pub(crate) mod search;
pub(crate) mod stats;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Deserialize as _;
use serde_json::{Map, Value};

use crate::auth::Caller;
use crate::config::Config;
use crate::db::Db;
pub(crate) use context::Answer;
use context::{Context, Tool, Visibility};
use envelope::{Envelope, ErrorBody, ErrorEnvelope, Performance, ToolError};
use list::ListSessions;
use open::Open;
use querylog::QueryLog;
use schema::InputValidator;
use search::SearchSessions;

/// The server's description of itself, sent in `initialize`: what it reads, and how to use it.
pub(crate) static INSTRUCTIONS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "moraine-mcp remembers past AI coding-agent sessions ({}). \
Use search_sessions to find events by words (it returns handles and snippets, not payloads), \
list_sessions to browse sessions by time window, and open with any returned ID to expand a \
session, turn or event; follow the traversal IDs in open's answers to move around. Both \
search_sessions and list_sessions take a project filter (a repository's directory name, or its \
path) to keep to one repository; every session names its project.",
        crate::vocab::Harness::titles()
    )
});

/// One parsed tool call: which tool, with its typed arguments.
pub(crate) enum ToolCall {
    Search(search::Args),
    List(list::Args),
    Open(open::Args),
}

impl ToolCall {
    /// The published definitions, in `tools/list` order.
    pub(crate) fn definitions() -> Vec<rmcp::model::Tool> {
        vec![
            SearchSessions::definition(),
            ListSessions::definition(),
            Open::definition(),
        ]
    }

    /// Validates the call's arguments against the input schema of tool `name` and reads them;
    /// arguments that do not fit are answered at once. `None` when there is no such tool.
    fn parse(
        name: &str,
        call: &Call<'_>,
        catalog: &Catalog,
    ) -> Option<Result<Self, CallToolResult>> {
        Some(match name {
            SearchSessions::NAME => call.read::<SearchSessions>(catalog).map(Self::Search),
            ListSessions::NAME => call.read::<ListSessions>(catalog).map(Self::List),
            Open::NAME => call.read::<Open>(catalog).map(Self::Open),
            _ => return None,
        })
    }

    /// Runs the call and answers it.
    async fn apply(self, call: Call<'_>) -> CallToolResult {
        match self {
            Self::Search(args) => call.answer::<SearchSessions>(args).await,
            Self::List(args) => call.answer::<ListSessions>(args).await,
            Self::Open(args) => call.answer::<Open>(args).await,
        }
    }
}

/// The tools as published: definitions, and the compiled input schema of each.
struct Catalog {
    published: Vec<rmcp::model::Tool>,
    inputs: HashMap<&'static str, InputValidator>,
}

impl Catalog {
    fn new() -> Self {
        let mut inputs = HashMap::new();
        inputs.insert(SearchSessions::NAME, validator::<SearchSessions>());
        inputs.insert(ListSessions::NAME, validator::<ListSessions>());
        inputs.insert(Open::NAME, validator::<Open>());
        Self {
            published: ToolCall::definitions(),
            inputs,
        }
    }
}

fn validator<T: Tool>() -> InputValidator {
    InputValidator::new(&T::input_schema(), T::input_rules())
}

/// The tool set: the published catalog and the context every call runs in.
pub(crate) struct Tools {
    ctx: Context,
    catalog: Catalog,
}

impl Tools {
    pub(crate) fn new(db: Db, config: Arc<Config>, query_log: QueryLog) -> Self {
        let outcomes: Vec<&str> = std::iter::once("ok")
            .chain(envelope::ErrorCode::ALL.iter().map(|c| c.as_str()))
            .collect();
        db.metrics().zero_tools(
            &[SearchSessions::NAME, ListSessions::NAME, Open::NAME],
            &outcomes,
        );
        db.metrics().search_reads(&search::READ_PATHS);
        db.metrics().search_postings(&search::READ_PATHS);
        Self {
            ctx: Context::new(db, config, query_log),
            catalog: Catalog::new(),
        }
    }

    /// The tools as published in `tools/list`.
    pub(crate) fn published(&self) -> &[rmcp::model::Tool] {
        &self.catalog.published
    }

    /// Runs a tool call; `None` when there is no such tool. `caller` names the token (for the
    /// query log).
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        caller: &Caller,
    ) -> Option<CallToolResult> {
        let call = Call {
            ctx: &self.ctx,
            arguments: Value::Object(arguments.unwrap_or_default()),
            caller,
            started: Instant::now(),
        };
        Some(match ToolCall::parse(name, &call, &self.catalog)? {
            Ok(tool_call) => tool_call.apply(call).await,
            Err(rejected) => rejected,
        })
    }

    /// Runs tool `T` for another surface than MCP (the web pages): validated against the same
    /// schema, under the same deadline and rights, counted, timed and logged as an MCP call,
    /// and answered with the typed answer rather than its envelope.
    pub(crate) async fn run<T: Tool>(
        &self,
        arguments: Map<String, Value>,
        caller: &Caller,
    ) -> Result<Answer<T>, ErrorBody> {
        let call = Call {
            ctx: &self.ctx,
            arguments: Value::Object(arguments),
            caller,
            started: Instant::now(),
        };
        let outcome = match call.args::<T>(&self.catalog) {
            Ok(args) => call.outcome::<T>(args).await,
            Err(error) => Err(error),
        };
        match outcome {
            Ok(answer) => {
                call.answered::<T>(&answer);
                Ok(answer)
            }
            Err(error) => Err(call.failed::<T>(&error).0),
        }
    }
}

/// One call in progress: what it was given and when it started.
struct Call<'a> {
    ctx: &'a Context,
    arguments: Value,
    caller: &'a Caller,
    started: Instant,
}

impl Call<'_> {
    /// Checks the arguments against `T`'s published schema, then reads them into `T::Args`.
    fn args<T: Tool>(&self, catalog: &Catalog) -> Result<T::Args, ToolError> {
        catalog.inputs[T::NAME]
            .check(&self.arguments)
            .and_then(|()| {
                T::Args::deserialize(&self.arguments).map_err(|e| {
                    ToolError::Internal(format!(
                        "arguments that passed the schema were unreadable: {e}"
                    ))
                })
            })
    }

    /// [`Self::args`], a failure answered at once.
    fn read<T: Tool>(&self, catalog: &Catalog) -> Result<T::Args, CallToolResult> {
        self.args::<T>(catalog)
            .map_err(|error| self.fail::<T>(error))
    }

    /// Runs `T` under its deadline.
    async fn outcome<T: Tool>(&self, args: T::Args) -> Result<Answer<T>, ToolError> {
        let budget = T::budget(&self.ctx.config);
        let deadline = self.started + Duration::from_millis(budget.deadline_ms);
        let visible = Visibility::of(self.caller);
        let work = self
            .ctx
            .db
            .admit_call(T::run(self.ctx, &visible, args, deadline));
        tokio::time::timeout_at(deadline.into(), work)
            .await
            .unwrap_or(Err(ToolError::Deadline))
    }

    /// Runs `T` under its deadline and answers with its envelope (or the error envelope).
    async fn answer<T: Tool>(self, args: T::Args) -> CallToolResult {
        match self.outcome::<T>(args).await {
            Ok(answer) => self.succeed::<T>(answer),
            Err(error) => self.fail::<T>(error),
        }
    }

    /// Times a successful call and lets the tool record it.
    fn answered<T: Tool>(&self, answer: &Answer<T>) -> Performance {
        let performance = self.finish::<T>(answer.sla_target_ms, "ok");
        T::answered(self.ctx, answer, &performance, self.caller);
        performance
    }

    fn succeed<T: Tool>(self, answer: Answer<T>) -> CallToolResult {
        let performance = self.answered::<T>(&answer);
        let text = T::render(&answer);
        let envelope = Envelope {
            schema_version: T::SCHEMA_VERSION.into(),
            tool: T::NAME.into(),
            request: answer.request,
            data: answer.data,
            warnings: answer.warnings,
            performance,
        };
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content =
            Some(serde_json::to_value(envelope).expect("envelopes serialise"));
        result
    }

    /// Logs and times a failed call: its error body and performance block.
    fn failed<T: Tool>(&self, error: &ToolError) -> (ErrorBody, Performance) {
        let budget = T::budget(&self.ctx.config);
        let body = error.body(budget.deadline_ms);
        match error {
            ToolError::Backend(detail) | ToolError::Internal(detail) => {
                tracing::warn!(tool = T::NAME, code = body.code.as_str(), %detail, "tool call failed");
            }
            _ => {
                tracing::debug!(tool = T::NAME, code = body.code.as_str(), message = %body.message, "tool call rejected");
            }
        }
        let performance = self.finish::<T>(budget.fallback_sla_ms, body.code.as_str());
        (body, performance)
    }

    fn fail<T: Tool>(&self, error: ToolError) -> CallToolResult {
        let (body, performance) = self.failed::<T>(&error);
        let text = body.text(T::NAME);
        let Value::Object(request) = self.arguments.clone() else {
            unreachable!("arguments are built as an object")
        };
        let envelope = ErrorEnvelope {
            schema_version: "moraine.mcp.error.v1".into(),
            tool: T::NAME.into(),
            request,
            error: body,
            warnings: Vec::new(),
            performance,
        };
        let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
        result.structured_content =
            Some(serde_json::to_value(envelope).expect("envelopes serialise"));
        result
    }

    /// The performance block, and the latency metric from the same clock reading.
    fn finish<T: Tool>(&self, sla_target_ms: u64, outcome: &str) -> Performance {
        let elapsed = self.started.elapsed();
        let elapsed_ms = elapsed.as_millis() as u64;
        let met_sla = elapsed_ms <= sla_target_ms;
        self.ctx
            .db
            .metrics()
            .observe_tool(T::NAME, outcome, elapsed.as_secs_f64(), met_sla);
        Performance {
            elapsed_ms,
            sla_target_ms,
            met_sla,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envelope::ErrorCode;
    use serde_json::json;

    /// The code and field of the error `T`'s validator gives `args`.
    fn rejected<T: Tool>(args: Value) -> (ErrorCode, String) {
        let error = validator::<T>().check(&args).unwrap_err();
        let body = error.body(0);
        let field = body.details.get("field").and_then(Value::as_str);
        (body.code, field.unwrap_or("").to_owned())
    }

    fn accepted<T: Tool>(args: Value) -> bool {
        validator::<T>().check(&args).is_ok()
    }

    #[test]
    fn test_search_input_failures_map_to_spec_codes() {
        type S = SearchSessions;
        let invalid = |field: &str| (ErrorCode::InvalidRequest, field.to_owned());
        assert!(accepted::<S>(json!({"query": "x"})));
        assert!(accepted::<S>(json!({"query": "x", "n_hits": 10.0})));
        assert_eq!(rejected::<S>(json!({"query": "   "})), invalid("query"));
        assert_eq!(rejected::<S>(json!({})), invalid("query"));
        assert_eq!(
            rejected::<S>(json!({"query": "x", "n_hits": 0})),
            invalid("n_hits")
        );
        assert_eq!(
            rejected::<S>(json!({"query": "x", "n_hits": 51})),
            invalid("n_hits")
        );
        assert_eq!(
            rejected::<S>(json!({"query": "x", "n_hits": 2.5})),
            invalid("n_hits")
        );
        assert_eq!(
            rejected::<S>(json!({"query": "x", "event_types": []})),
            invalid("event_types")
        );
        assert_eq!(
            rejected::<S>(json!({"query": "x", "event_types": ["user_input", "debug_trace"]})),
            (ErrorCode::UnsupportedEventType, "event_types".into())
        );
        assert_eq!(
            rejected::<S>(json!({"query": "x", "event_types": ["unknown"]})),
            (ErrorCode::UnsupportedEventType, "event_types".into())
        );
        assert_eq!(
            rejected::<S>(json!({"query": "x", "within_id": "nope"})),
            (ErrorCode::InvalidId, "within_id".into())
        );
        assert_eq!(
            rejected::<S>(json!({"query": "x", "limit": 3})),
            invalid("limit")
        );
        assert_eq!(
            rejected::<S>(json!({"query": "a".repeat(4097)})),
            invalid("query")
        );
        let error = validator::<S>()
            .check(&json!({"query": "x", "n_hits": 0}))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "n_hits must be an integer between 1 and 50"
        );
    }

    #[test]
    fn test_search_windows_are_rfc_3339_datetimes() {
        type S = SearchSessions;
        assert!(accepted::<S>(
            json!({"query": "x", "start_datetime": "2026-04-30T09:00:00Z", "end_datetime": "2026-05-01T00:00:00+02:00"})
        ));
        assert!(accepted::<S>(json!({"query": "x", "end_datetime": null})));
        for field in ["start_datetime", "end_datetime"] {
            for bad in [json!("2026-04-30"), json!("yesterday"), json!(7)] {
                let mut args = json!({"query": "x"});
                args[field] = bad;
                assert_eq!(
                    rejected::<S>(args),
                    (ErrorCode::InvalidRequest, field.to_owned())
                );
            }
        }
    }

    /// `T` takes `base` with any `project` of 1–1024 characters, and refuses others.
    fn check_project_filter<T: Tool>(base: &Value) {
        let with = |project: &Value| {
            let mut args = base.clone();
            args["project"] = project.clone();
            args
        };
        for project in [
            json!("moraine-mcp"),
            json!("/home/dev/src/moraine-mcp/"),
            json!(r"C:\src\x"),
            json!("p".repeat(1024)),
            Value::Null,
        ] {
            assert!(accepted::<T>(with(&project)), "{project}");
        }
        for project in [json!(""), json!("p".repeat(1025)), json!(7), json!(["a"])] {
            assert_eq!(
                rejected::<T>(with(&project)),
                (ErrorCode::InvalidRequest, "project".to_owned()),
                "{project}"
            );
        }
        let error = validator::<T>().check(&with(&json!(""))).unwrap_err();
        assert_eq!(
            error.to_string(),
            "project must be a non-empty string of at most 1024 characters"
        );
    }

    #[test]
    fn test_project_filters_are_bounded_strings_for_search_and_list() {
        check_project_filter::<SearchSessions>(&json!({"query": "x"}));
        check_project_filter::<ListSessions>(
            &json!({"start_datetime": "2026-04-30T09:00:00Z", "end_datetime": "2026-04-30T13:00:00Z"}),
        );
    }

    #[test]
    fn test_open_blank_is_invalid_request_and_malformed_is_invalid_id() {
        let invalid = (ErrorCode::InvalidRequest, "id".to_owned());
        assert_eq!(rejected::<Open>(json!({"id": "  "})), invalid);
        assert_eq!(rejected::<Open>(json!({"id": ""})), invalid);
        assert_eq!(
            rejected::<Open>(json!({"id": "not-a-valid-id"})),
            (ErrorCode::InvalidId, "id".into())
        );
        assert_eq!(rejected::<Open>(json!({})), invalid);
        assert_eq!(rejected::<Open>(json!({"id": 7})), invalid);
        assert!(accepted::<Open>(
            json!({"id": "event:evt_01J9DOESNOTEXIST000000000000"})
        ));
    }

    #[test]
    fn test_list_datetimes_need_an_offset() {
        type L = ListSessions;
        assert!(accepted::<L>(
            json!({"start_datetime": "2026-04-30T09:00:00-04:00", "end_datetime": "2026-04-30T13:00:00Z"})
        ));
        assert_eq!(
            rejected::<L>(
                json!({"start_datetime": "2026-04-30T09:00:00", "end_datetime": "2026-04-30T13:00:00Z"})
            ),
            (ErrorCode::InvalidRequest, "start_datetime".into())
        );
        assert_eq!(
            rejected::<L>(
                json!({"start_datetime": "2026-04-30T09:00:00Z", "end_datetime": "2026-04-30T13:00:00Z", "mode": "fast"})
            ),
            (ErrorCode::InvalidRequest, "mode".into())
        );
    }

    #[test]
    fn test_published_schemas_compile_and_are_objects() {
        for tool in ToolCall::definitions() {
            assert_eq!(tool.input_schema["type"], "object");
            let output = Value::Object(tool.output_schema.clone().unwrap().as_ref().clone());
            assert_eq!(output["type"], "object");
            jsonschema::validator_for(&output).unwrap();
            assert_eq!(tool.annotations.unwrap().read_only_hint, Some(true));
        }
    }

    /// The published definitions are the contract: they change only on purpose, and then the
    /// snapshot is rewritten with `UPDATE_SCHEMA=1 cargo test --lib published_schemas`.
    #[test]
    fn test_published_schemas_match_their_snapshot() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/snapshots/tools_list.json"
        );
        let published = serde_json::to_value(ToolCall::definitions()).unwrap();
        // Only JSON Schema's own formats: strict validators warn about Rust-type names.
        fn formats(value: &Value, found: &mut Vec<String>) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::String(f)) = map.get("format") {
                        found.push(f.clone());
                    }
                    map.values().for_each(|v| formats(v, found));
                }
                Value::Array(items) => items.iter().for_each(|v| formats(v, found)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        formats(&published, &mut found);
        assert!(
            found.iter().all(|f| f == "date-time"),
            "non-standard formats: {found:?}"
        );
        let actual = serde_json::to_string_pretty(&published).unwrap() + "\n";
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::write(path, &actual).unwrap();
        }
        let expected = std::fs::read_to_string(path).expect("the snapshot exists");
        assert_eq!(
            actual, expected,
            "published tool schemas changed; review and regenerate with UPDATE_SCHEMA=1"
        );
    }
}
