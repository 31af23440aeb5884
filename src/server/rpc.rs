//! Checks on the MCP endpoint that the MCP SDK does not make: `tools/call` parameters of the
//! wrong shape are invalid params (JSON-RPC −32602), and stateful mode holds a bounded number
//! of sessions.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};

use super::guards::LogLimiter;
use crate::http_error::{ErrorCode, HttpError};

/// The protocol generation whose errors are also HTTP statuses.
const MODERN_PROTOCOL: &str = "2026-07-28";

/// Answers a `tools/call` whose `params` are not `{name: string, arguments?: object}` with
/// −32602 (invalid params), as JSON-RPC requires; the SDK would call it an unknown method.
pub(crate) async fn check_tool_calls(request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    // The body is already in memory (the body limit read it), so this copies nothing.
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return HttpError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::BadRequest,
            "the request body could not be read",
        )
        .into_response();
    };
    // A method written with escapes (`tools\/call`) is `tools/call` too: such a body is parsed.
    let may_call = memchr::memmem::find(&bytes, b"tools/call").is_some()
        || memchr::memchr(b'\\', &bytes).is_some();
    if may_call
        && let Ok(message) = serde_json::from_slice::<Value>(&bytes)
        && message["method"] == "tools/call"
        && let Some(problem) = params_problem(&message["params"])
    {
        return invalid_params(&parts.headers, &message, problem);
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// What is wrong with `tools/call` params, if anything.
fn params_problem(params: &Value) -> Option<&'static str> {
    let Value::Object(params) = params else {
        return Some("params must be an object");
    };
    if !params.get("name").is_some_and(Value::is_string) {
        return Some("params.name must be a string");
    }
    match params.get("arguments") {
        None | Some(Value::Null | Value::Object(_)) => None,
        Some(_) => Some("params.arguments must be an object"),
    }
}

fn invalid_params(headers: &HeaderMap, message: &Value, problem: &str) -> Response {
    let modern = headers
        .get("mcp-protocol-version")
        .is_some_and(|v| v.as_bytes() == MODERN_PROTOCOL.as_bytes())
        || message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == MODERN_PROTOCOL;
    // The 2026-07-28 generation reports a malformed request as HTTP 400 too.
    let status = if modern {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let error = json!({
        "jsonrpc": "2.0",
        "id": message.get("id").cloned().unwrap_or(Value::Null),
        "error": { "code": -32602, "message": format!("invalid params: {problem}") },
    });
    (status, axum::Json(error)).into_response()
}

/// The sessions of stateful mode and their cap.
#[derive(Clone)]
pub(crate) struct SessionCap {
    pub(crate) sessions: Arc<LocalSessionManager>,
    pub(crate) max: usize,
}

/// Refuses a new session (a POST without `Mcp-Session-Id`) once `max` are open: 503 with
/// `Retry-After`, until sessions end (DELETE) or expire.
pub(crate) async fn cap_sessions(
    State(cap): State<SessionCap>,
    request: Request,
    next: Next,
) -> Response {
    let opens_session =
        request.method() == Method::POST && !request.headers().contains_key("mcp-session-id");
    if opens_session && cap.sessions.sessions.read().await.len() >= cap.max {
        // Once a minute: clients retrying at the limit would otherwise log a line each.
        static REFUSED: LogLimiter = LogLimiter::per_ms(60_000);
        if REFUSED.admit() {
            tracing::warn!(
                max = cap.max,
                "refusing new MCP sessions: at the session limit (logged once a minute)"
            );
        }
        return HttpError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::TooManySessions,
            format!(
                "this server holds at most {} MCP sessions; end unused ones with DELETE or retry later",
                cap.max
            ),
        )
        .with_header(header::RETRY_AFTER, "30")
        .into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_tool_call_params_shapes() {
        assert_eq!(
            params_problem(&json!({"name": "open", "arguments": {"id": "x"}})),
            None
        );
        assert_eq!(params_problem(&json!({"name": "open"})), None);
        assert_eq!(
            params_problem(&json!({"name": "open", "arguments": null})),
            None
        );
        assert!(params_problem(&json!({"name": 7})).is_some());
        assert!(params_problem(&json!({"name": "open", "arguments": [1]})).is_some());
        assert!(params_problem(&json!({"name": "open", "arguments": "x"})).is_some());
        assert!(params_problem(&json!([])).is_some());
        assert!(params_problem(&Value::Null).is_some());
    }
}
