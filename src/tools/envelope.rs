//! The spec's response envelopes, its error codes, and the one mapping of every failure onto them.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::db::DbError;
use crate::vocab::EventType;

/// `performance` on every response, success or error.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Performance {
    /// Milliseconds from receiving the call to the serialised response.
    pub elapsed_ms: u64,
    /// The spec's target (its P95 figure) for the kind of request this was.
    pub sla_target_ms: u64,
    /// `elapsed_ms <= sla_target_ms`.
    pub met_sla: bool,
}

/// A successful response.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Envelope<R, D> {
    /// `moraine.mcp.<tool>.v1`.
    pub schema_version: String,
    pub tool: String,
    /// The request after trimming and defaults.
    pub request: R,
    pub data: D,
    /// Non-fatal notes about the request, e.g. ignored query terms. Always present.
    pub warnings: Vec<String>,
    pub performance: Performance,
}

/// A rejected request or failed lookup (`schema_version` `moraine.mcp.error.v1`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct ErrorEnvelope {
    pub schema_version: String,
    pub tool: String,
    /// The request as received.
    pub request: Map<String, Value>,
    pub error: ErrorBody,
    pub warnings: Vec<String>,
    pub performance: Performance,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
    /// Machine-readable context: `field` names the offending input where there is one;
    /// `retryable` is true for busy, backend_failure and deadline_exceeded.
    pub details: Map<String, Value>,
}

/// The spec's error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ErrorCode {
    InvalidRequest,
    InvalidId,
    NotFound,
    UnsupportedEventType,
    DeadlineExceeded,
    Busy,
    BackendFailure,
    ResourceExhausted,
    InternalError,
}

impl ErrorCode {
    pub(crate) const ALL: [Self; 9] = [
        Self::InvalidRequest,
        Self::InvalidId,
        Self::NotFound,
        Self::UnsupportedEventType,
        Self::DeadlineExceeded,
        Self::Busy,
        Self::BackendFailure,
        Self::ResourceExhausted,
        Self::InternalError,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::InvalidId => "invalid_id",
            Self::NotFound => "not_found",
            Self::UnsupportedEventType => "unsupported_event_type",
            Self::DeadlineExceeded => "deadline_exceeded",
            Self::Busy => "busy",
            Self::BackendFailure => "backend_failure",
            Self::ResourceExhausted => "resource_exhausted",
            Self::InternalError => "internal_error",
        }
    }

    fn retryable(self) -> bool {
        matches!(
            self,
            Self::Busy | Self::BackendFailure | Self::DeadlineExceeded
        )
    }
}

/// Every way a tool call can fail, mapped once to the spec's codes by [`ToolError::body`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ToolError {
    #[error("{message}")]
    InvalidRequest {
        field: Option<String>,
        message: String,
    },
    #[error("{field} is not a valid Moraine MCP ID")]
    InvalidId { field: String },
    #[error("{kind} not found")]
    NotFound { kind: &'static str, id: String },
    #[error("unsupported event type: {value}")]
    UnsupportedEventType { value: String },
    /// The call ran past its tool's deadline (the envelope names it: [`ToolError::body`]).
    #[error("the request ran past its deadline")]
    Deadline,
    #[error("the service is at capacity; retry shortly")]
    Busy,
    #[error("the session store is unavailable: {0}")]
    Backend(String),
    /// The store answers but holds no schema (its database was dropped, or never migrated).
    #[error("the session store has no schema")]
    SchemaMissing,
    #[error("the query hit a storage resource limit")]
    ResourceExhausted,
    #[error("internal error: {0}")]
    Internal(String),
}

impl ToolError {
    pub(crate) fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::InvalidRequest {
            field: Some(field.to_owned()),
            message: message.into(),
        }
    }

    pub(crate) fn code(&self) -> ErrorCode {
        match self {
            Self::InvalidRequest { .. } => ErrorCode::InvalidRequest,
            Self::InvalidId { .. } => ErrorCode::InvalidId,
            Self::NotFound { .. } => ErrorCode::NotFound,
            Self::UnsupportedEventType { .. } => ErrorCode::UnsupportedEventType,
            Self::Deadline => ErrorCode::DeadlineExceeded,
            Self::Busy => ErrorCode::Busy,
            Self::Backend(_) | Self::SchemaMissing => ErrorCode::BackendFailure,
            Self::ResourceExhausted => ErrorCode::ResourceExhausted,
            Self::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// The `error` object of the envelope; `deadline_ms` is the deadline the call ran under.
    pub(crate) fn body(&self, deadline_ms: u64) -> ErrorBody {
        let code = self.code();
        let mut details = Map::new();
        let message = match self {
            Self::InvalidRequest { field, message } => {
                if let Some(field) = field {
                    details.insert("field".into(), json!(field));
                }
                message.clone()
            }
            Self::InvalidId { field } => {
                details.insert("field".into(), json!(field));
                "id is not a valid Moraine MCP ID".into()
            }
            Self::NotFound { id, .. } => {
                details.insert("id".into(), json!(id));
                self.to_string()
            }
            Self::UnsupportedEventType { .. } => {
                details.insert("field".into(), json!("event_types"));
                let supported: Vec<&str> =
                    EventType::SEARCHABLE.iter().map(|t| t.as_str()).collect();
                details.insert("supported".into(), json!(supported));
                self.to_string()
            }
            // Details stay in the logs: no SQL or internals reach the client.
            Self::Backend(_) => "the session store is unavailable; retry shortly".into(),
            Self::SchemaMissing => "the session store has no schema (its database was dropped, \
                                    or never migrated): an operator runs `moraine-mcp migrate`"
                .into(),
            Self::Internal(_) => "internal error; the server log has the details".into(),
            Self::Deadline => format!("the request ran past its {deadline_ms} ms deadline"),
            _ => self.to_string(),
        };
        if code.retryable() {
            details.insert("retryable".into(), json!(true));
        }
        ErrorBody {
            code,
            message,
            details,
        }
    }
}

/// A storage failure, as the tool call that met it fails.
impl From<DbError> for ToolError {
    fn from(error: DbError) -> Self {
        match error {
            DbError::Busy => Self::Busy,
            DbError::Deadline => Self::Deadline,
            error if error.schema_missing() => Self::SchemaMissing,
            DbError::Unavailable(detail) | DbError::Server(detail) => Self::Backend(detail),
            DbError::ResourceExhausted(_) => Self::ResourceExhausted,
            // Tools only read; a migration is a backend that is not ready.
            DbError::Migrating => Self::Backend(DbError::Migrating.to_string()),
            DbError::Protocol(detail) | DbError::Statement(detail) => Self::Internal(detail),
        }
    }
}

impl ErrorBody {
    /// The compact text of `content[0].text` for a failed call of `tool`.
    pub(crate) fn text(&self, tool: &str) -> String {
        let field = self
            .details
            .get("field")
            .and_then(Value::as_str)
            .map(|f| format!(" (field {f})"))
            .unwrap_or_default();
        format!(
            "{tool} failed: {}: {}{field}",
            self.code.as_str(),
            self.message
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_error_bodies_follow_the_spec_examples() {
        let body = ToolError::UnsupportedEventType {
            value: "debug_trace".into(),
        }
        .body(5000);
        assert_eq!(body.message, "unsupported event type: debug_trace");
        assert_eq!(body.details["field"], "event_types");
        assert_eq!(body.details["supported"].as_array().unwrap().len(), 8);

        let body = ToolError::InvalidId { field: "id".into() }.body(5000);
        assert_eq!(body.message, "id is not a valid Moraine MCP ID");
        assert_eq!(body.details["field"], "id");

        let body = ToolError::NotFound {
            kind: "event",
            id: "event:x".into(),
        }
        .body(5000);
        assert_eq!(body.message, "event not found");
        assert_eq!(body.details["id"], "event:x");

        let body = ToolError::Busy.body(5000);
        assert_eq!(body.details["retryable"], true);
        let body = ToolError::Deadline.body(5000);
        assert_eq!(body.message, "the request ran past its 5000 ms deadline");
        assert_eq!(
            body.text("search_sessions"),
            "search_sessions failed: deadline_exceeded: the request ran past its 5000 ms deadline"
        );
        let body = ToolError::Backend("Code: 60. secret SQL".into()).body(5000);
        assert!(!body.message.contains("SQL"));
    }
}
