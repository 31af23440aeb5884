//! Bearer-token authentication: the configured tokens and their scopes, the constant-time
//! check, and the layer that names (and bounds) every caller of a protected route.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::{Scope, TEAM_TOKENS_VARIABLE, TokenConfig};
use crate::http_error::{ErrorCode, HttpError};
use crate::ingest::sources::Visible;
use crate::metrics::Metrics;
use crate::server::guards::LogLimiter;

/// Who is calling and what they may do; put in request extensions by [`authenticate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    /// The token's name (never the token), or `anonymous` / `stdio`.
    pub name: String,
    scopes: Vec<Scope>,
    /// The source the ingest API records for what this caller sends; `None` lets the caller
    /// name it (no tokens configured: a loopback-only or explicitly opened server).
    pub ingest_source: Option<String>,
    /// The sources whose sessions the caller may read; `None` is every source.
    pub read_sources: Option<Arc<[String]>>,
}

impl Caller {
    /// The caller of a server without tokens: everything is allowed.
    pub(crate) fn anonymous() -> Self {
        Self::unrestricted("anonymous")
    }

    /// The caller on stdio (the local user).
    pub(crate) fn stdio() -> Self {
        Self::unrestricted("stdio")
    }

    fn unrestricted(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            scopes: vec![Scope::Read, Scope::Ingest],
            ingest_source: None,
            read_sources: None,
        }
    }

    pub(crate) fn may(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    /// The sources whose standing the caller may see: those it may read, and its own.
    pub(crate) fn visible_sources(&self) -> Visible {
        if self.may(Scope::Metrics) {
            return Visible::All;
        }
        let mut names = Vec::new();
        if self.may(Scope::Read) {
            match &self.read_sources {
                None => return Visible::All,
                Some(sources) => names.extend(sources.iter().cloned()),
            }
        }
        if self.may(Scope::Ingest) {
            match &self.ingest_source {
                None => return Visible::All,
                Some(own) if !names.contains(own) => names.push(own.clone()),
                Some(_) => {}
            }
        }
        Visible::Only(names)
    }
}

/// One configured token.
#[derive(Debug)]
struct Token {
    digest: [u8; 32],
    caller: Caller,
}

/// The accepted bearer tokens, stored as SHA-256 digests so every comparison takes the same time.
#[derive(Debug)]
pub(crate) struct Tokens {
    tokens: Vec<Token>,
}

impl Tokens {
    pub(crate) fn new(tokens: &[TokenConfig]) -> Self {
        Self {
            tokens: tokens
                .iter()
                .map(|t| Token {
                    digest: digest(t.token.trim()),
                    caller: Caller {
                        name: t.name.clone(),
                        scopes: t.scopes.clone(),
                        ingest_source: Some(t.ingest_source().to_owned()),
                        read_sources: t.read_sources.as_deref().map(Arc::from),
                    },
                })
                .collect(),
        }
    }

    /// No tokens configured: the endpoint is open.
    pub(crate) fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The caller the presented token names, comparing against every token in constant time.
    pub(crate) fn check(&self, presented: &str) -> Option<&Caller> {
        let digest = digest(presented);
        let mut found = None;
        for token in &self.tokens {
            if bool::from(digest.ct_eq(&token.digest)) {
                found = Some(&token.caller);
            }
        }
        found
    }
}

/// The bearer token a request presents, if any.
pub(crate) fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// What [`authenticate`] needs: the tokens, and the scopes the guarded routes accept (any one
/// of them will do).
#[derive(Clone)]
pub(crate) struct AuthState {
    pub tokens: Arc<Tokens>,
    pub metrics: Metrics,
    pub required: &'static [Scope],
}

/// Requires a configured bearer token with the route's scope (when any tokens are configured)
/// and names the caller for logs, metrics, the query log and what it may read and write.
pub(crate) async fn authenticate(
    State(state): State<AuthState>,
    mut request: Request,
    next: Next,
) -> Response {
    if state.tokens.is_empty() {
        // A laptop sending a token believes it writes to a team server that checks who
        // pushes: that this one takes anyone's pushes is told, not silently accepted.
        if state.required == [Scope::Ingest] && bearer(request.headers()).is_some() {
            state.metrics.observe_auth("none", "no_tokens");
            warn_open_server();
            return HttpError::new(
                StatusCode::FORBIDDEN,
                ErrorCode::ServerWithoutTokens,
                format!(
                    "this server has no tokens configured, so it cannot tell who pushes; \
                     configure tokens on the server ({TEAM_TOKENS_VARIABLE} or auth.tokens) \
                     and push again"
                ),
            )
            .into_response();
        }
        request.extensions_mut().insert(Caller::anonymous());
        return next.run(request).await;
    }
    let Some(presented) = bearer(request.headers()) else {
        state.metrics.observe_auth("none", "missing");
        return unauthorized("missing bearer token", false);
    };
    let Some(caller) = state.tokens.check(presented) else {
        state.metrics.observe_auth("none", "rejected");
        tracing::info!("rejected a request with an unknown bearer token");
        return unauthorized("unknown bearer token", true);
    };
    if !state.required.iter().any(|scope| caller.may(*scope)) {
        let scopes = state
            .required
            .iter()
            .map(|scope| scope.as_str())
            .collect::<Vec<_>>()
            .join(" or ");
        state.metrics.observe_auth(&caller.name, "forbidden");
        tracing::info!(token = %caller.name, scope = %scopes, "refused a token without the scope");
        return forbidden(format!("token {:?} lacks the {scopes} scope", caller.name))
            .into_response();
    }
    state.metrics.observe_auth(&caller.name, "accepted");
    tracing::debug!(token = %caller.name, "authenticated");
    request.extensions_mut().insert(caller.clone());
    next.run(request).await
}

/// Logs, at most once a minute, that pushes with tokens reach a server without any.
fn warn_open_server() {
    static WARNED: LogLimiter = LogLimiter::per_ms(60_000);
    if WARNED.admit() {
        tracing::warn!(
            "refused a push that carries a token: this server has no tokens configured \
             (set {TEAM_TOKENS_VARIABLE} or auth.tokens to serve a team)"
        );
    }
}

fn unauthorized(message: &str, invalid: bool) -> Response {
    let challenge = if invalid {
        r#"Bearer realm="moraine-mcp", error="invalid_token""#
    } else {
        r#"Bearer realm="moraine-mcp""#
    };
    HttpError::new(StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized, message)
        .with_header(header::WWW_AUTHENTICATE, challenge)
        .into_response()
}

/// A known token that may not do what it asked.
pub(crate) fn forbidden(message: impl Into<String>) -> HttpError {
    HttpError::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_check_names_the_caller_with_its_scopes_and_sources() {
        let mut ingest = TokenConfig::reader("laptop", " 0123456789abcdef ");
        ingest.scopes = vec![Scope::Ingest];
        ingest.source = Some("alice".into());
        let mut limited = TokenConfig::reader("ci", "fedcba9876543210");
        limited.read_sources = Some(vec!["ci".into()]);
        let tokens = Tokens::new(&[ingest, limited]);
        let laptop = tokens.check("0123456789abcdef").unwrap();
        assert_eq!(laptop.name, "laptop");
        assert!(laptop.may(Scope::Ingest) && !laptop.may(Scope::Read));
        assert_eq!(laptop.ingest_source.as_deref(), Some("alice"));
        let ci = tokens.check("fedcba9876543210").unwrap();
        assert!(ci.may(Scope::Read) && !ci.may(Scope::Ingest));
        assert_eq!(ci.read_sources.as_deref(), Some(&["ci".to_owned()][..]));
        assert_eq!(ci.ingest_source.as_deref(), Some("ci"));
        assert!(tokens.check("0123456789abcdeF").is_none());
        assert!(!tokens.is_empty());
        assert!(Caller::anonymous().may(Scope::Ingest));
    }
}
