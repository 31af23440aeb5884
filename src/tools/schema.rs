//! The published tool schemas, and validation of every call against exactly those schemas.
//!
//! Input schemas are written out here, since their constraints (patterns, ranges, enums) are the
//! contract; output schemas are generated from the response types, so they cannot drift from
//! what is serialised. Each output schema accepts the success envelope or the error envelope.

use std::sync::Arc;

use jsonschema::error::ValidationErrorKind;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use serde_json::{Map, Value, json};

use super::envelope::{ErrorEnvelope, ToolError};
use crate::vocab::{EventType, SessionMode};

/// The ID grammar of spec-notes: a kind prefix and a bounded URL-safe token.
pub const ID_PATTERN: &str = "^(session|turn|event):[A-Za-z0-9_-]{1,128}$";

/// RFC 3339 date-time with an explicit `Z` or offset.
pub const DATETIME_PATTERN: &str = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$";

pub const MAX_QUERY_CHARS: u64 = 4096;
pub const MAX_N_HITS: u64 = 50;
pub const MAX_LIST_LIMIT: u64 = 50;
/// Longest accepted harness or source name.
const MAX_NAME_CHARS: u64 = 128;
/// Longest accepted cursor.
const MAX_CURSOR_CHARS: u64 = 1024;

fn name_filter(what: &str) -> Value {
    json!({
        "type": ["string", "null"],
        "minLength": 1,
        "maxLength": MAX_NAME_CHARS,
        "description": format!("Only sessions whose {what} is exactly this (case-sensitive)."),
    })
}

pub fn search_input() -> Value {
    let types: Vec<&str> = EventType::SEARCHABLE.iter().map(|t| t.as_str()).collect();
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["query"],
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
                "pattern": "\\S",
                "description": "Words to look for (BM25 over words; quotes and operators are not special). Leading and trailing whitespace is ignored."
            },
            "within_id": {
                "type": ["string", "null"],
                "pattern": ID_PATTERN,
                "description": "Search only this session or turn (an ID returned by this server). Event IDs are not accepted."
            },
            "event_types": {
                "type": ["array", "null"],
                "minItems": 1,
                "items": { "type": "string", "enum": types },
                "description": "Event types to search. Default: user_input, assistant_response, tool_response."
            },
            "n_hits": {
                "type": ["integer", "null"],
                "minimum": 1,
                "maximum": MAX_N_HITS,
                "description": "Hits to return, 1–50. Default 10."
            },
            "harness": name_filter("harness (e.g. codex, claude-code)"),
            "source": name_filter("source name"),
        }
    })
}

pub fn list_input() -> Value {
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
            "harness": name_filter("harness (e.g. codex, claude-code)"),
            "source": name_filter("source name"),
        }
    })
}

pub fn open_input() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["id"],
        "properties": {
            "id": {
                "type": "string",
                "pattern": ID_PATTERN,
                "description": "A session:, turn: or event: ID returned by search_sessions, list_sessions or open."
            }
        }
    })
}

/// The output schema: the tool's success envelope or the error envelope.
pub fn output<T: JsonSchema>() -> Value {
    let success = generator().into_root_schema_for::<T>().to_value();
    let error = generator()
        .into_root_schema_for::<ErrorEnvelope>()
        .to_value();
    json!({
        "type": "object",
        "oneOf": [strip_root(success), strip_root(error)],
    })
}

fn generator() -> schemars::SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(RecursiveTransform(drop_numeric_format))
        .into_generator()
}

/// Drops schemars' Rust-type formats (`uint32`, `double`, …): they are not JSON Schema formats,
/// and strict validators warn about every one. The `minimum` beside them keeps the meaning.
fn drop_numeric_format(schema: &mut schemars::Schema) {
    let numeric = schema
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| {
            f.starts_with("int") || f.starts_with("uint") || f == "double" || f == "float"
        });
    if numeric {
        schema.remove("format");
    }
}

fn strip_root(mut schema: Value) -> Value {
    if let Some(map) = schema.as_object_mut() {
        map.remove("title");
        map.remove("$schema");
    }
    schema
}

/// Converts a JSON value into the object map rmcp wants.
pub fn as_object(value: Value) -> Arc<Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("schemas are objects"),
    }
}

/// A compiled input schema plus the tool-specific meaning of its failures.
pub struct InputValidator {
    validator: jsonschema::Validator,
    /// Fields whose pattern is the ID grammar: a mismatch is `invalid_id`.
    id_fields: &'static [&'static str],
}

impl InputValidator {
    pub fn new(schema: &Value, id_fields: &'static [&'static str]) -> Self {
        Self {
            validator: jsonschema::validator_for(schema).expect("published schemas compile"),
            id_fields,
        }
    }

    /// Validates `arguments`; the first failure becomes the spec's error.
    pub fn check(&self, arguments: &Value) -> Result<(), ToolError> {
        let mut errors: Vec<(String, ToolError)> = self
            .validator
            .iter_errors(arguments)
            .map(|error| {
                let mapped = self.map(&error);
                (error.instance_path().as_str().to_owned(), mapped)
            })
            .collect();
        // Unknown fields and missing fields first, then in document order, for stable answers.
        errors.sort_by_key(|(path, e)| (!path.is_empty(), path.clone(), e.code().as_str()));
        match errors.into_iter().next() {
            Some((_, error)) => Err(error),
            None => Ok(()),
        }
    }

    fn map(&self, error: &jsonschema::ValidationError<'_>) -> ToolError {
        let path = error.instance_path().as_str();
        let field = path
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or("")
            .to_owned();
        let value = error.instance().as_ref();
        match error.kind() {
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or("field").to_owned();
                ToolError::invalid(&name, format!("{name} is required"))
            }
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let name = unexpected.first().cloned().unwrap_or_default();
                ToolError::invalid(&name, format!("unknown field: {name}"))
            }
            ValidationErrorKind::Type { .. } if path.is_empty() => ToolError::InvalidRequest {
                field: None,
                message: "arguments must be a JSON object".into(),
            },
            ValidationErrorKind::Enum { .. }
                if field == "event_types" && path != "/event_types" =>
            {
                ToolError::UnsupportedEventType {
                    value: value
                        .as_str()
                        .map_or_else(|| value.to_string(), str::to_owned),
                }
            }
            ValidationErrorKind::Pattern { .. } if self.id_fields.contains(&field.as_str()) => {
                let blank = value.as_str().is_some_and(|s| s.trim().is_empty());
                if blank && field == "id" {
                    ToolError::invalid(&field, "id must be a non-empty string")
                } else {
                    ToolError::InvalidId { field }
                }
            }
            _ => ToolError::invalid(&field, friendly_message(&field, error)),
        }
    }
}

/// A message a model can act on, for failures of a field's type or bounds.
fn friendly_message(field: &str, error: &jsonschema::ValidationError<'_>) -> String {
    match field {
        "query" if matches!(error.kind(), ValidationErrorKind::MaxLength { .. }) => {
            format!("query must be at most {MAX_QUERY_CHARS} characters")
        }
        "query" => "query must be a non-empty string".into(),
        "n_hits" => format!("n_hits must be an integer between 1 and {MAX_N_HITS}"),
        "limit" => format!("limit must be an integer between 1 and {MAX_LIST_LIMIT}"),
        "event_types" if matches!(error.kind(), ValidationErrorKind::MinItems { .. }) => {
            "event_types must contain at least one event type".into()
        }
        "event_types" => "event_types must be an array of event type names".into(),
        "start_datetime" | "end_datetime" => {
            format!("{field} must be an RFC 3339 datetime with an explicit timezone offset or Z")
        }
        "mode" => "mode must be one of web_search, mcp_internal, tool_calling, chat".into(),
        "sort" => "sort must be asc or desc".into(),
        "cursor" => "cursor must be a next_cursor returned by list_sessions".into(),
        "within_id" => "within_id must be a session or turn ID string".into(),
        "id" => "id must be a non-empty string".into(),
        "harness" | "source" => {
            format!("{field} must be a non-empty string of at most {MAX_NAME_CHARS} characters")
        }
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::envelope::ErrorCode;
    use super::*;

    fn search() -> InputValidator {
        InputValidator::new(&search_input(), &["within_id"])
    }

    fn code(validator: &InputValidator, args: Value) -> (ErrorCode, String) {
        let error = validator.check(&args).unwrap_err();
        let body = error.body();
        (
            body.code,
            body.details
                .get("field")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        )
    }

    #[test]
    fn test_search_input_failures_map_to_spec_codes() {
        let v = search();
        assert!(v.check(&json!({"query": "x"})).is_ok());
        assert!(v.check(&json!({"query": "x", "n_hits": 10.0})).is_ok());
        assert_eq!(
            code(&v, json!({"query": "   "})),
            (ErrorCode::InvalidRequest, "query".into())
        );
        assert_eq!(
            code(&v, json!({})),
            (ErrorCode::InvalidRequest, "query".into())
        );
        assert_eq!(
            code(&v, json!({"query": "x", "n_hits": 0})),
            (ErrorCode::InvalidRequest, "n_hits".into())
        );
        assert_eq!(
            code(&v, json!({"query": "x", "n_hits": 51})),
            (ErrorCode::InvalidRequest, "n_hits".into())
        );
        assert_eq!(
            code(&v, json!({"query": "x", "n_hits": 2.5})),
            (ErrorCode::InvalidRequest, "n_hits".into())
        );
        assert_eq!(
            code(&v, json!({"query": "x", "event_types": []})),
            (ErrorCode::InvalidRequest, "event_types".into())
        );
        assert_eq!(
            code(
                &v,
                json!({"query": "x", "event_types": ["user_input", "debug_trace"]})
            ),
            (ErrorCode::UnsupportedEventType, "event_types".into())
        );
        assert_eq!(
            code(&v, json!({"query": "x", "event_types": ["unknown"]})),
            (ErrorCode::UnsupportedEventType, "event_types".into())
        );
        assert_eq!(
            code(&v, json!({"query": "x", "within_id": "nope"})),
            (ErrorCode::InvalidId, "within_id".into())
        );
        assert_eq!(
            code(&v, json!({"query": "x", "limit": 3})),
            (ErrorCode::InvalidRequest, "limit".into())
        );
        let long = "a".repeat(4097);
        assert_eq!(
            code(&v, json!({ "query": long })),
            (ErrorCode::InvalidRequest, "query".into())
        );
    }

    #[test]
    fn test_open_blank_is_invalid_request_and_malformed_is_invalid_id() {
        let v = InputValidator::new(&open_input(), &["id"]);
        assert_eq!(
            code(&v, json!({"id": "  "})),
            (ErrorCode::InvalidRequest, "id".into())
        );
        assert_eq!(
            code(&v, json!({"id": ""})),
            (ErrorCode::InvalidRequest, "id".into())
        );
        assert_eq!(
            code(&v, json!({"id": "not-a-valid-id"})),
            (ErrorCode::InvalidId, "id".into())
        );
        assert_eq!(
            code(&v, json!({})),
            (ErrorCode::InvalidRequest, "id".into())
        );
        assert!(
            v.check(&json!({"id": "event:evt_01J9DOESNOTEXIST000000000000"}))
                .is_ok()
        );
    }

    #[test]
    fn test_list_datetimes_need_an_offset() {
        let v = InputValidator::new(&list_input(), &[]);
        assert!(v.check(&json!({"start_datetime": "2026-04-30T09:00:00-04:00", "end_datetime": "2026-04-30T13:00:00Z"})).is_ok());
        assert_eq!(
            code(
                &v,
                json!({"start_datetime": "2026-04-30T09:00:00", "end_datetime": "2026-04-30T13:00:00Z"})
            ),
            (ErrorCode::InvalidRequest, "start_datetime".into())
        );
        assert_eq!(
            code(
                &v,
                json!({"start_datetime": "2026-04-30T09:00:00Z", "end_datetime": "2026-04-30T13:00:00Z", "mode": "fast"})
            ),
            (ErrorCode::InvalidRequest, "mode".into())
        );
    }
}
