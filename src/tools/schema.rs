//! Schema machinery shared by the tools: the ID and datetime grammars, output schemas generated
//! from the response types, and validation of every call against exactly the published input
//! schema, with each failure mapped to the spec's error.
//!
//! Each tool writes its own input schema (its constraints are the contract) and the messages for
//! its own fields; output schemas are generated from the wire types, so they cannot drift from
//! what is serialised. Each output schema accepts the success envelope or the error envelope.

use std::sync::Arc;

use jsonschema::error::ValidationErrorKind;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use serde_json::{Map, Value, json};

use super::envelope::{ErrorEnvelope, ToolError};

/// The ID grammar of spec-notes: a kind prefix and a bounded URL-safe token.
pub(crate) const ID_PATTERN: &str = "^(session|turn|event):[A-Za-z0-9_-]{1,128}$";

/// RFC 3339 date-time with an explicit `Z` or offset.
pub(crate) const DATETIME_PATTERN: &str = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$";

/// Longest accepted harness or source name.
pub(crate) const MAX_NAME_CHARS: u64 = 128;

/// The schema of the `harness` and `source` filters.
pub(crate) fn name_filter(what: &str) -> Value {
    json!({
        "type": ["string", "null"],
        "minLength": 1,
        "maxLength": MAX_NAME_CHARS,
        "description": format!("Only sessions whose {what} is exactly this (case-sensitive)."),
    })
}

/// The `harness` filter, naming the harnesses this service reads.
pub(crate) fn harness_filter() -> Value {
    let names: Vec<&str> = crate::vocab::Harness::ALL
        .iter()
        .map(|h| h.as_str())
        .collect();
    name_filter(&format!("harness (one of {})", names.join(", ")))
}

/// The message for a `harness` or `source` filter that breaks its schema.
pub(crate) fn name_filter_message(field: &str) -> String {
    format!("{field} must be a non-empty string of at most {MAX_NAME_CHARS} characters")
}

/// The output schema: the success envelope `T` or the error envelope.
pub(crate) fn output<T: JsonSchema>() -> Value {
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
pub(crate) fn as_object(value: Value) -> Arc<Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("schemas are objects"),
    }
}

/// What a tool says about failures of its own fields.
pub(crate) struct InputRules {
    /// Fields whose pattern is the ID grammar: a mismatch is `invalid_id`.
    pub id_fields: &'static [&'static str],
    /// A tool-specific error for a failure, before the general mapping applies.
    pub special: fn(field: &str, error: &jsonschema::ValidationError<'_>) -> Option<ToolError>,
    /// The message for a field whose type or bounds are wrong.
    pub message: fn(field: &str, kind: &ValidationErrorKind) -> Option<String>,
}

/// A compiled input schema plus the tool-specific meaning of its failures.
pub(crate) struct InputValidator {
    validator: jsonschema::Validator,
    rules: InputRules,
    /// Array fields and their `maxItems`: checked before the errors are listed, so a huge array
    /// costs one comparison, not one error per item.
    bounded_arrays: Vec<(String, u64)>,
}

impl InputValidator {
    pub(crate) fn new(schema: &Value, rules: InputRules) -> Self {
        let bounded_arrays = schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(field, property)| {
                let limit = property.get("maxItems")?.as_u64()?;
                Some((field.clone(), limit))
            })
            .collect();
        Self {
            validator: jsonschema::validator_for(schema).expect("published schemas compile"),
            rules,
            bounded_arrays,
        }
    }

    /// Validates `arguments`; the first failure becomes the spec's error. Valid arguments are
    /// checked without listing anything; invalid ones have their failures listed (bounded by
    /// the schema's limits) to answer the first in a stable order.
    pub(crate) fn check(&self, arguments: &Value) -> Result<(), ToolError> {
        if self.validator.is_valid(arguments) {
            return Ok(());
        }
        for (field, limit) in &self.bounded_arrays {
            if let Some(items) = arguments.get(field).and_then(Value::as_array)
                && items.len() as u64 > *limit
            {
                let kind = ValidationErrorKind::MaxItems { limit: *limit };
                let message = (self.rules.message)(field, &kind)
                    .unwrap_or_else(|| format!("{field} may hold at most {limit} items"));
                return Err(ToolError::invalid(field, message));
            }
        }
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
        if let Some(special) = (self.rules.special)(&field, error) {
            return special;
        }
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
            ValidationErrorKind::Pattern { .. }
                if self.rules.id_fields.contains(&field.as_str()) =>
            {
                ToolError::InvalidId { field }
            }
            kind => {
                let message =
                    (self.rules.message)(&field, kind).unwrap_or_else(|| error.to_string());
                ToolError::invalid(&field, message)
            }
        }
    }
}

/// No tool-specific errors.
pub(crate) fn no_special(
    _field: &str,
    _error: &jsonschema::ValidationError<'_>,
) -> Option<ToolError> {
    None
}
