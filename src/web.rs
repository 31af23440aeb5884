//! The web pages for people: search, sessions, a session's turns and the sources, rendered on
//! the server from the tools' own answers, under the same rights as MCP and behind a sign-in.

mod event_page;
mod layout;
mod oauth_signin;
mod person;
mod search_page;
mod session_page;
mod sessions_page;
mod signin;
mod sources_page;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::middleware;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};

use crate::auth::{AuthState, WebClient};
use crate::config::Config;
use crate::db::Db;
use crate::tools::Tools;

/// The policy every page is served under: nothing runs, nothing loads from elsewhere, and no
/// other site may frame a page or receive a form.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
     form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// What every page shares.
#[derive(Clone)]
pub(crate) struct Web {
    tools: Arc<Tools>,
    db: Db,
    /// The credentials accepted, exactly as on the MCP endpoint.
    auth: AuthState,
    signins: Arc<signin::SignIns>,
    /// The client the pages sign people in as at the OAuth issuer, when configured.
    oauth_client: Option<Arc<WebClient>>,
    /// The public origin (`https://host`), when configured: where the issuer sends people back.
    public_origin: Option<String>,
}

impl Web {
    /// The pages of `config`, reading through `tools` with the credentials `auth` accepts.
    pub(crate) fn new(config: &Config, tools: Arc<Tools>, db: Db, auth: AuthState) -> Self {
        Self {
            tools,
            db,
            auth,
            signins: Arc::new(signin::SignIns::new(
                Duration::from_secs(config.web.session_idle_secs),
                config.web.max_signins,
            )),
            oauth_client: (!config.web.oauth_client_id.is_empty()).then(|| {
                Arc::new(WebClient {
                    id: config.web.oauth_client_id.clone(),
                    secret: config.web.oauth_client_secret.clone(),
                    scope: config.web.oauth_scope.clone(),
                })
            }),
            public_origin: config.server.public_origin().map(|p| p.origin),
        }
    }

    /// Whether cookies carry `Secure`: people reach the server over https. The origin's scheme
    /// is lower-cased (`HTTPS://` is https too).
    fn secure(&self) -> bool {
        self.public_origin
            .as_deref()
            .is_some_and(|origin| origin.starts_with("https://"))
    }

    /// The authorization server people may sign in at, when the pages are its client.
    fn oauth_issuer(&self) -> Option<&str> {
        self.oauth_client.as_ref()?;
        self.auth.oauth.as_ref().map(|oauth| oauth.issuer())
    }
}

/// The routes under `/ui`.
pub(crate) fn routes(web: Web) -> Router {
    Router::new()
        .route("/ui", get(|| async { Redirect::to("/ui/") }))
        .route("/ui/", get(search_page::get))
        .route("/ui/sessions", get(sessions_page::get))
        .route("/ui/session/{id}", get(session_page::get))
        .route("/ui/turn/{id}", get(session_page::turn))
        .route("/ui/event/{id}", get(event_page::get))
        .route("/ui/sources", get(sources_page::get))
        .route("/ui/signin", get(signin::form).post(signin::submit))
        .route("/ui/signin/oauth", get(oauth_signin::start))
        .route("/ui/signin/callback", get(oauth_signin::callback))
        .route("/ui/signout", post(signin::sign_out))
        .route("/ui/assets/style.css", get(style))
        .route("/ui/{*rest}", get(layout::not_found))
        .layer(middleware::map_response(secure_headers))
        .with_state(web)
}

/// The stylesheet, built into the binary.
async fn style() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        include_str!("web/style.css"),
    )
        .into_response()
}

/// The headers of every page: the content policy, no sniffing, no framing, no referrer to
/// other sites (a page's address holds its query; `no-referrer` would also blank the `Origin`
/// of the pages' own forms, which the Host/Origin check then refuses), and no caching of what
/// a person was allowed to read.
async fn secure_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}
