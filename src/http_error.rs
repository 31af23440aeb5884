//! The one shape of every JSON error body the HTTP surface writes:
//! `{"error": "<code>", "message": "<why, and what to do>"}`, the codes it may carry, and the
//! status and headers that go with it.

use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

/// A stable, machine-readable error code (each documented in the OpenAPI document).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ErrorCode {
    /// The request is not one the endpoint takes (its body, query or fields).
    InvalidRequest,
    /// The request could not be read as HTTP (Host headers, an unreadable body).
    BadRequest,
    RequestTimeout,
    PayloadTooLarge,
    UnsupportedEncoding,
    NotFound,
    Unauthorized,
    Forbidden,
    /// A push carrying a token reached a server that has none.
    ServerWithoutTokens,
    HostNotAllowed,
    OriginNotAllowed,
    /// Ingest is taking as many requests as it may (429).
    Busy,
    TooManySessions,
    /// The request outlasted the server's time limit.
    Timeout,
    /// The session store cannot answer now.
    Unavailable,
    InternalError,
    /// A pushed range does not start where the server's copy ends.
    OffsetMismatch,
    /// A pushed range differs from the bytes stored at its offset.
    ContentMismatch,
    /// A code this build does not know (from a newer server).
    #[serde(other)]
    #[strum(disabled)]
    Other,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The body of every JSON error answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorCode,
    pub message: String,
}

impl ErrorBody {
    /// The error body `bytes` hold, if they hold one.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }
}

/// An error answered over HTTP.
#[derive(Debug, Clone)]
pub(crate) struct HttpError {
    pub status: StatusCode,
    pub body: ErrorBody,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl HttpError {
    pub(crate) fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status,
            body: ErrorBody {
                error: code,
                message: message.into(),
            },
            headers: Vec::new(),
        }
    }

    /// 400 `invalid_request`.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest, message)
    }

    /// Adds a header to the answer (`Retry-After`, `WWW-Authenticate`, `Connection`).
    pub(crate) fn with_header(mut self, name: HeaderName, value: &str) -> Self {
        if let Ok(value) = HeaderValue::from_str(value) {
            self.headers.push((name, value));
        }
        self
    }

    /// Ends the connection after the answer (the client may still be sending, or sent
    /// something that leaves the connection's state unknown).
    pub(crate) fn closing(self) -> Self {
        self.with_header(axum::http::header::CONNECTION, "close")
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body)).into_response();
        response.headers_mut().extend(self.headers);
        response
    }
}

#[cfg(test)]
mod tests {
    use strum::VariantArray as _;

    use super::*;

    #[test]
    fn test_every_code_is_written_and_read_as_its_name() {
        for code in ErrorCode::VARIANTS
            .iter()
            .filter(|c| **c != ErrorCode::Other)
        {
            let json = serde_json::to_string(code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), *code);
        }
        // A newer server's code is still an error body.
        let body = ErrorBody::parse(br#"{"error":"quota_exceeded","message":"m"}"#).unwrap();
        assert_eq!(body.error, ErrorCode::Other);
    }

    #[test]
    fn test_every_code_is_documented_in_the_openapi_document() {
        let openapi =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.yaml"))
                .unwrap();
        for code in ErrorCode::VARIANTS
            .iter()
            .filter(|c| **c != ErrorCode::Other)
        {
            assert!(
                openapi.contains(code.as_str()),
                "{} is not in openapi.yaml",
                code.as_str()
            );
        }
    }
}
