//! Bearer-token authentication: the configured tokens, the constant-time check, and the layer
//! that names every caller of a protected route.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::TokenConfig;
use crate::metrics::Metrics;

/// Who is calling, by token name (never the token); put in request extensions by
/// [`authenticate`]. Over stdio the caller is the local user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller(pub String);

impl Caller {
    /// The caller of a server without tokens (loopback only, or explicitly opened).
    pub(crate) fn anonymous() -> Self {
        Self("anonymous".into())
    }

    /// The caller on stdio.
    pub(crate) fn stdio() -> Self {
        Self("stdio".into())
    }
}

/// The accepted bearer tokens, stored as SHA-256 digests so every comparison takes the same time.
#[derive(Debug)]
pub(crate) struct Tokens {
    tokens: Vec<(String, [u8; 32])>,
}

impl Tokens {
    pub(crate) fn new(tokens: &[TokenConfig]) -> Self {
        Self {
            tokens: tokens
                .iter()
                .map(|t| (t.name.clone(), digest(t.token.trim())))
                .collect(),
        }
    }

    /// No tokens configured: the endpoint is open.
    pub(crate) fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The name of the token presented, comparing against every token in constant time.
    pub(crate) fn check(&self, presented: &str) -> Option<&str> {
        let digest = digest(presented);
        let mut found = None;
        for (name, expected) in &self.tokens {
            if bool::from(digest.ct_eq(expected)) {
                found = Some(name.as_str());
            }
        }
        found
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// What [`authenticate`] needs.
#[derive(Clone)]
pub(crate) struct AuthState {
    pub tokens: Arc<Tokens>,
    pub metrics: Metrics,
}

/// Requires a configured bearer token (when any are configured) and names the caller for logs,
/// metrics and the query log.
pub(crate) async fn authenticate(
    State(state): State<AuthState>,
    mut request: Request,
    next: Next,
) -> Response {
    if state.tokens.is_empty() {
        request.extensions_mut().insert(Caller::anonymous());
        return next.run(request).await;
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    let Some(presented) = presented else {
        state.metrics.observe_auth("none", "missing");
        return unauthorized("missing bearer token", false);
    };
    match state.tokens.check(presented) {
        Some(name) => {
            state.metrics.observe_auth(name, "accepted");
            tracing::debug!(token = name, "authenticated");
            request.extensions_mut().insert(Caller(name.to_owned()));
            next.run(request).await
        }
        None => {
            state.metrics.observe_auth("none", "rejected");
            tracing::info!("rejected a request with an unknown bearer token");
            unauthorized("unknown bearer token", true)
        }
    }
}

fn unauthorized(message: &str, invalid: bool) -> Response {
    let challenge = if invalid {
        r#"Bearer realm="moraine-mcp", error="invalid_token""#
    } else {
        r#"Bearer realm="moraine-mcp""#
    };
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
        axum::Json(json!({ "error": "unauthorized", "message": message })),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_check_names_the_token_and_ignores_padding_of_configured_tokens() {
        let tokens = Tokens::new(&[
            TokenConfig::reader("laptop", " 0123456789abcdef "),
            TokenConfig::reader("ci", "fedcba9876543210"),
        ]);
        assert_eq!(tokens.check("0123456789abcdef"), Some("laptop"));
        assert_eq!(tokens.check("fedcba9876543210"), Some("ci"));
        assert_eq!(tokens.check("0123456789abcdeF"), None);
        assert!(!tokens.is_empty());
    }
}
