//! Authentication: who calls (a static bearer token, an OAuth access token, or no one on an
//! open server), what they may do, and the layer that names (and bounds) every caller of a
//! protected route, answering refusals as RFC 6750 and RFC 9728 ask.

mod client;
mod issuer;
mod metadata;
mod oauth;
mod rules;
mod tokens;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::config::{Scope, TEAM_TOKENS_VARIABLE};
use crate::http_error::{ErrorCode, HttpError};
use crate::ingest::sources::Visible;
use crate::metrics::Metrics;
use crate::server::guards::LogLimiter;
pub(crate) use client::WebClient;
pub(crate) use metadata::{metadata_routes, zero_metrics};
pub(crate) use oauth::OAuth;
pub(crate) use tokens::TokenStore;
pub(crate) use tokens::TokensFile;

/// How a caller proved who they are: the `method` label of the authentication metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// No credential: an open server, or a request without one.
    None,
    Static,
    OAuth,
}

impl Method {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Static => "static",
            Self::OAuth => "oauth",
        }
    }
}

/// Who is calling and what they may do; put in request extensions by [`authenticate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    /// The token's name (never the token), the person an OAuth token names, or `anonymous` /
    /// `stdio`.
    pub name: String,
    method: Method,
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
            method: Method::None,
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

/// What [`authenticate`] needs: the credentials accepted, and the scopes the guarded routes
/// accept (any one of them will do).
#[derive(Clone)]
pub(crate) struct AuthState {
    pub tokens: Arc<TokenStore>,
    pub oauth: Option<Arc<OAuth>>,
    pub metrics: Metrics,
    pub required: &'static [Scope],
}

impl AuthState {
    /// Neither tokens nor OAuth are asked for: the endpoint is open.
    pub(crate) fn is_open(&self) -> bool {
        self.tokens.is_unused() && self.oauth.is_none()
    }

    /// The challenge of a 401 or 403: RFC 6750, with RFC 9728's `resource_metadata` and the
    /// scope needed when OAuth is configured.
    fn challenge(&self, error: Option<(&str, &str)>) -> String {
        let mut parts = Vec::new();
        if let Some((code, description)) = error {
            parts.push(format!("error=\"{code}\""));
            parts.push(format!("error_description=\"{description}\""));
        }
        match &self.oauth {
            Some(oauth) => {
                parts.push(format!("scope=\"{}\"", rules::scope_list(self.required)));
                parts.push(format!("resource_metadata=\"{}\"", oauth.metadata_url));
            }
            None => parts.insert(0, r#"realm="moraine-mcp""#.to_owned()),
        }
        format!("Bearer {}", parts.join(", "))
    }

    /// The caller a presented credential names: a static token, else an OAuth access token.
    /// A credential that names no one is counted and answered as [`authenticate`] answers it.
    pub(crate) async fn identify(&self, presented: &str) -> Result<Caller, Response> {
        if let Some(caller) = self.tokens.current().check(presented) {
            return Ok(caller.clone());
        }
        match &self.oauth {
            Some(oauth) => oauth
                .caller(presented)
                .await
                .map_err(|refusal| refuse_oauth(self, refusal)),
            None => {
                self.metrics
                    .observe_auth(Method::Static.as_str(), "rejected");
                tracing::info!("rejected a request with an unknown bearer token");
                Err(self.unauthorized(
                    "unknown bearer token",
                    Some(("invalid_token", "the bearer token is not known")),
                ))
            }
        }
    }

    /// Why the caller may not push as their source, if they may not. A person signed in
    /// through the authorization server pushes as their name; not when the access token gives
    /// none (every such token would write as one source), nor as the source of a static token
    /// (a person named like a laptop's source would replace its sessions).
    fn refused_source(&self, caller: &Caller) -> Option<String> {
        if self.required != [Scope::Ingest] || caller.method != Method::OAuth {
            return None;
        }
        let source = caller.ingest_source.as_deref()?;
        if source == rules::UNNAMED {
            Some(
                "the access token names no one to record pushes as (its name claim and `sub` \
                 are empty)"
                    .to_owned(),
            )
        } else if self.tokens.current().writes_as(source) {
            Some(format!(
                "{source:?} is the source of a static token: a person cannot push as it"
            ))
        } else {
            None
        }
    }

    /// Counts an accepted caller.
    pub(crate) fn accepted(&self, caller: &Caller) {
        self.metrics
            .observe_auth(caller.method.as_str(), "accepted");
    }

    fn unauthorized(&self, message: &str, error: Option<(&str, &str)>) -> Response {
        HttpError::new(StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized, message)
            .with_header(header::WWW_AUTHENTICATE, &self.challenge(error))
            .into_response()
    }
}

/// Requires a credential with the route's scope (when any are configured) and names the
/// caller for logs, metrics, the query log and what it may read and write. A valid static
/// token is never answered 401, OAuth or not: hosts that send one keep working.
pub(crate) async fn authenticate(
    State(state): State<AuthState>,
    mut request: Request,
    next: Next,
) -> Response {
    match admit(&state, request.headers()).await {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(refusal) => refusal,
    }
}

/// The caller the request's headers name, when they may use the guarded route; else the
/// answer to give (counted in the metrics).
pub(crate) async fn admit(state: &AuthState, headers: &HeaderMap) -> Result<Caller, Response> {
    if state.is_open() {
        // A laptop sending a token believes it writes to a team server that checks who
        // pushes: that this one takes anyone's pushes is told, not silently accepted.
        if state.required == [Scope::Ingest] && bearer(headers).is_some() {
            state
                .metrics
                .observe_auth(Method::None.as_str(), "no_tokens");
            warn_open_server();
            return Err(HttpError::new(
                StatusCode::FORBIDDEN,
                ErrorCode::ServerWithoutTokens,
                format!(
                    "this server has no tokens configured, so it cannot tell who pushes; \
                     configure tokens on the server ({TEAM_TOKENS_VARIABLE} or auth.tokens) \
                     and push again"
                ),
            )
            .into_response());
        }
        return Ok(Caller::anonymous());
    }
    let Some(presented) = bearer(headers) else {
        state.metrics.observe_auth(Method::None.as_str(), "missing");
        return Err(state.unauthorized("missing bearer token", None));
    };
    let caller = state.identify(presented).await?;
    if !state.required.iter().any(|scope| caller.may(*scope)) {
        let scopes = state
            .required
            .iter()
            .map(|scope| scope.as_str())
            .collect::<Vec<_>>()
            .join(" or ");
        state
            .metrics
            .observe_auth(caller.method.as_str(), "forbidden");
        tracing::info!(caller = %caller.name, method = caller.method.as_str(), scope = %scopes, "refused a caller without the scope");
        let message = format!("{} lacks the {scopes} scope", describe(&caller));
        let description = format!("the {scopes} scope is needed");
        return Err(forbidden(message)
            .with_header(
                header::WWW_AUTHENTICATE,
                &state.challenge(Some(("insufficient_scope", &description))),
            )
            .into_response());
    }
    if let Some(message) = state.refused_source(&caller) {
        state
            .metrics
            .observe_auth(caller.method.as_str(), "forbidden");
        tracing::info!(caller = %caller.name, "refused a person's push: {message}");
        return Err(forbidden(message).into_response());
    }
    state.accepted(&caller);
    tracing::debug!(caller = %caller.name, method = caller.method.as_str(), "authenticated");
    Ok(caller)
}

/// An OAuth access token that names no one: 401 with the reason (503 when the authorization
/// server cannot be asked: the token may well be valid).
fn refuse_oauth(state: &AuthState, refusal: oauth::Refusal) -> Response {
    state
        .metrics
        .observe_auth(Method::OAuth.as_str(), refusal.as_str());
    tracing::info!(reason = refusal.as_str(), "refused a bearer token");
    if refusal == oauth::Refusal::Unavailable {
        return HttpError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Unavailable,
            refusal.description(),
        )
        .with_header(header::RETRY_AFTER, "5")
        .into_response();
    }
    state.unauthorized(
        refusal.description(),
        Some(("invalid_token", refusal.description())),
    )
}

/// How a refusal names the caller: a token by its name, a person as such.
fn describe(caller: &Caller) -> String {
    match caller.method {
        Method::OAuth => format!("the access token of {:?}", caller.name),
        _ => format!("token {:?}", caller.name),
    }
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

/// A known token that may not do what it asked.
pub(crate) fn forbidden(message: impl Into<String>) -> HttpError {
    HttpError::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, message)
}
