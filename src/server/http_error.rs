//! The one shape of every JSON error body the HTTP surface writes:
//! `{"error": "<code>", "message": "<why, and what to do>"}`, with the status and headers that go
//! with it.

use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answered over HTTP.
#[derive(Debug, Clone)]
pub(crate) struct HttpError {
    pub status: StatusCode,
    /// A stable, machine-readable code (documented in the OpenAPI document).
    pub code: &'static str,
    pub message: String,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl HttpError {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            headers: Vec::new(),
        }
    }

    /// Adds a header to the answer (`Retry-After`, `WWW-Authenticate`, `Connection`).
    pub(crate) fn with_header(mut self, name: HeaderName, value: &str) -> Self {
        if let Ok(value) = HeaderValue::from_str(value) {
            self.headers.push((name, value));
        }
        self
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            axum::Json(json!({ "error": self.code, "message": self.message })),
        )
            .into_response();
        response.headers_mut().extend(self.headers);
        response
    }
}
