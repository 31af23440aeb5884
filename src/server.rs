//! The HTTP surface: the MCP endpoint (rmcp Streamable HTTP behind bearer-token auth and
//! Host/Origin checks), `/healthz`, `/metrics`, and the layers every request passes through.
//! The connection loop (timeouts, limits, graceful shutdown) is in [`connections`].

mod connections;
pub(crate) mod guards;
mod hosts;
mod ingest_api;
mod rpc;
mod stall;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

use crate::auth::{self, AuthState, OAuth, TokenStore};
use crate::config::{Config, Scope};
use crate::db::{Db, DbError};
use crate::ingest::push::PushIngest;
use crate::mcp::McpServer;
use crate::migrate;
use crate::tools::Tools;
use crate::web::{self, Web};
pub(crate) use connections::{ConnectionLimits, serve};

/// Shared by the HTTP handlers.
#[derive(Clone)]
struct AppState {
    db: Db,
    /// The static tokens: their names show on `/metrics` only to a `metrics` token.
    tokens: Arc<TokenStore>,
    health_timeout: Duration,
    /// Whether the last health probe failed, so only changes are logged as warnings.
    unhealthy: Arc<AtomicBool>,
}

/// Builds the application router. `addr` is the bound address (for the service's own origin).
pub(crate) fn router(
    config: &Arc<Config>,
    db: Db,
    tools: Arc<Tools>,
    tokens: Arc<TokenStore>,
    addr: SocketAddr,
    shutdown: &CancellationToken,
) -> Router {
    let server = &config.server;
    let metrics = db.metrics().clone();
    let oauth = OAuth::new(config).map(Arc::new);
    if config.auth.is_configured() {
        auth::zero_metrics(&metrics, !tokens.is_unused(), oauth.is_some());
    }
    let auth_state = |required: &'static [Scope]| AuthState {
        tokens: tokens.clone(),
        oauth: oauth.clone(),
        metrics: metrics.clone(),
        required,
    };
    let guard = |required: &'static [Scope]| {
        middleware::from_fn_with_state(auth_state(required), auth::authenticate)
    };
    let ingest = ingest_api::routes(
        ingest_api::IngestApi {
            push: Arc::new(
                PushIngest::new(db.clone(), config.clone()).expect("validated redaction patterns"),
            ),
            max_decoded_bytes: config.ingest.max_decoded_bytes,
            metrics: metrics.clone(),
        },
        guard(&[Scope::Read, Scope::Ingest, Scope::Metrics]),
    );
    let state = AppState {
        db: db.clone(),
        tokens: tokens.clone(),
        health_timeout: Duration::from_millis(config.clickhouse.health_timeout_ms),
        unhealthy: Arc::new(AtomicBool::new(false)),
    };
    let metrics_route = if config.auth.protect_metrics {
        get(metrics_get).route_layer(guard(&[Scope::Metrics]))
    } else {
        get(metrics_get)
    };
    // Its token is checked outside, before the body is read (see `FirstChecked`).
    let mcp = mcp_routes(config, tools.clone(), addr, shutdown)
        .layer(middleware::from_fn(rpc::check_tool_calls));
    let metadata = oauth.as_ref().map_or_else(Router::new, |oauth| {
        auth::metadata_routes(oauth, &server.mcp_path)
    });
    let web = if config.web.enabled {
        let auth = auth_state(&[Scope::Read]);
        // The pages answer only the names MCP answers, against DNS rebinding.
        web::routes(Web::new(config, tools, db, auth)).layer(middleware::from_fn_with_state(
            hosts::Allowed::of(config, addr),
            hosts::check,
        ))
    } else {
        Router::new()
    };
    Router::new()
        .route("/healthz", get(healthz_get))
        .route("/metrics", metrics_route)
        .merge(mcp)
        .with_state(state)
        .merge(ingest)
        .merge(metadata)
        .merge(web)
        .fallback({
            let mcp_path: Arc<str> = Arc::from(server.mcp_path.as_str());
            let pages = config.web.enabled;
            move |method: Method, uri: axum::http::Uri| {
                not_found(mcp_path.clone(), pages, method, uri)
            }
        })
        // `guards::limit_body` bounds every body by the configured limits; axum's own 2 MiB
        // default for extracted bodies would refuse ingest requests well within them.
        .layer(DefaultBodyLimit::disable())
        // Outermost first. The timeout covers reading the body (a stalled upload ends in 503);
        // the metrics see every status, 413s and timeouts included.
        .layer(
            ServiceBuilder::new()
                .layer(CatchPanicLayer::new())
                // Failures are logged by `guards::observe` (rate-limited) and `healthz_get`
                // (on changes), not once per response.
                .layer(TraceLayer::new_for_http().on_failure(()))
                .layer(middleware::from_fn_with_state(
                    metrics.clone(),
                    guards::observe,
                ))
                .layer(middleware::from_fn(guards::require_one_host))
                .layer(middleware::from_fn_with_state(
                    guards::TimeLimits {
                        requests: Duration::from_secs(server.request_timeout_secs),
                        ingest: Duration::from_secs(config.ingest.request_timeout_secs),
                    },
                    guards::time_limit,
                ))
                .layer(middleware::from_fn_with_state(
                    FirstChecked {
                        auth: auth_state(&[Scope::Read]),
                        paths: Arc::from([server.mcp_path.clone()]),
                        only: None,
                    },
                    authenticate_first,
                ))
                .layer(middleware::from_fn_with_state(
                    FirstChecked {
                        auth: auth_state(&[Scope::Ingest]),
                        paths: ingest_api::WRITE_PATHS.map(str::to_owned).into(),
                        only: Some(Method::POST),
                    },
                    authenticate_first,
                ))
                .layer(middleware::from_fn_with_state(
                    guards::IngestSlots {
                        slots: Arc::new(Semaphore::new(config.ingest.max_concurrent_requests)),
                        metrics: metrics.clone(),
                    },
                    guards::limit_ingest,
                ))
                .layer(middleware::from_fn_with_state(
                    guards::BodyLimits {
                        max_bytes: server.request_body_limit_bytes as usize,
                        ingest_max_bytes: config.ingest.max_request_bytes,
                        stall: Duration::from_secs(server.body_timeout_secs),
                    },
                    guards::limit_body,
                )),
        )
}

/// Routes whose token is checked before anything else is given to a request, outside the
/// ingest slots and body limits: a client without a valid token can neither hold one of the
/// few ingest slots nor make the server read a body (it is answered 401 or 403 at once). These
/// routes have no guard of their own: without this one their handlers find no caller.
#[derive(Clone)]
struct FirstChecked {
    auth: AuthState,
    paths: Arc<[String]>,
    /// The one method checked (others are the router's to answer, 405), or every method.
    only: Option<Method>,
}

async fn authenticate_first(
    State(first): State<FirstChecked>,
    mut request: axum::extract::Request,
    next: middleware::Next,
) -> Response {
    let checked = first.only.as_ref().is_none_or(|m| request.method() == m)
        && first.paths.iter().any(|p| p == request.uri().path());
    if !checked {
        return next.run(request).await;
    }
    match auth::admit(&first.auth, request.headers()).await {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(refusal) => {
            tokio::spawn(guards::drain(request.into_body()));
            refusal
        }
    }
}

/// The connection limits of `config`.
pub(crate) fn connection_limits(config: &Config) -> ConnectionLimits {
    ConnectionLimits {
        max_connections: config.server.max_connections,
        max_per_client: config.server.max_connections_per_client,
        header_timeout: Duration::from_secs(config.server.header_timeout_secs),
        write_timeout: Duration::from_secs(config.server.write_timeout_secs),
        grace: Duration::from_secs(config.server.shutdown_grace_secs),
    }
}

/// The rmcp Streamable HTTP service at exactly the MCP path; in stateful mode with its
/// sessions capped.
fn mcp_routes(
    config: &Config,
    tools: Arc<Tools>,
    addr: SocketAddr,
    shutdown: &CancellationToken,
) -> Router<AppState> {
    let server = &config.server;
    let allowed = hosts::Allowed::of(config, addr);
    let keep_alive = (server.stateful && server.sse_keep_alive_secs > 0)
        .then(|| Duration::from_secs(server.sse_keep_alive_secs));
    let mcp_config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(server.stateful)
        .with_json_response(!server.stateful)
        .with_sse_keep_alive(keep_alive)
        .with_allowed_hosts(allowed.hosts())
        .with_allowed_origins(allowed.origins())
        .with_max_request_body_bytes(server.request_body_limit_bytes as usize)
        .with_cancellation_token(shutdown.child_token());
    let handler = McpServer::new(tools);
    // Checked here first, so a refusal says which setting accepts the name.
    let check_hosts = middleware::from_fn_with_state(allowed, hosts::check);
    if !server.stateful {
        return mcp_route(
            &server.mcp_path,
            handler,
            Arc::new(NeverSessionManager::default()),
            mcp_config,
        )
        .layer(check_hosts);
    }
    let sessions = Arc::new(LocalSessionManager::default());
    let cap = rpc::SessionCap {
        sessions: sessions.clone(),
        max: server.max_sessions,
    };
    mcp_route(&server.mcp_path, handler, sessions, mcp_config)
        .layer(middleware::from_fn_with_state(cap, rpc::cap_sessions))
        .layer(check_hosts)
}

/// The rmcp Streamable HTTP service at exactly `path`, with `manager` deciding on sessions.
fn mcp_route<M: SessionManager>(
    path: &str,
    handler: McpServer,
    manager: Arc<M>,
    config: StreamableHttpServerConfig,
) -> Router<AppState> {
    let service = StreamableHttpService::new(move || Ok(handler.clone()), manager, config);
    Router::new().route_service(path, service)
}

async fn healthz_get(State(state): State<AppState>) -> Response {
    let expected = migrate::latest_version();
    let probe =
        tokio::time::timeout(state.health_timeout, state.db.schema_version_unqueued()).await;
    let (status, clickhouse, version, reason) = match probe {
        Ok(Ok(version)) if version == expected => (StatusCode::OK, "up", Some(version), None),
        Ok(Ok(version)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "up",
            Some(version),
            Some(format!(
                "schema version {version}, expected {expected}: run `moraine-mcp migrate`"
            )),
        ),
        Ok(Err(error)) if error.schema_missing() => (
            StatusCode::SERVICE_UNAVAILABLE,
            "up",
            None,
            Some(
                "the store has no schema (its database was dropped, or never migrated): run \
                 `moraine-mcp migrate`; this server serves again once it exists"
                    .to_owned(),
            ),
        ),
        Ok(Err(DbError::Server(message))) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "up",
            None,
            Some(format!(
                "schema not readable ({message}): run `moraine-mcp migrate`"
            )),
        ),
        Ok(Err(error)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "down",
            None,
            Some(error.to_string()),
        ),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "down",
            None,
            Some(format!(
                "clickhouse did not answer within {} ms",
                state.health_timeout.as_millis()
            )),
        ),
    };
    let healthy = status == StatusCode::OK;
    // Only changes are worth a log line: a load balancer probes every few seconds.
    if state.unhealthy.swap(!healthy, Ordering::Relaxed) == healthy {
        if healthy {
            tracing::info!("clickhouse is reachable again; healthy");
        } else {
            tracing::warn!(reason = reason.as_deref().unwrap_or(""), "unhealthy");
        }
    }
    let body = json!({
        "status": if healthy { "ok" } else { "unavailable" },
        "clickhouse": clickhouse,
        "schema_version": version,
        "expected_schema_version": expected,
        "version": env!("CARGO_PKG_VERSION"),
        "reason": reason,
    });
    (
        status,
        [(header::CACHE_CONTROL, "no-store")],
        axum::Json(body),
    )
        .into_response()
}

async fn metrics_get(State(state): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    state.db.export_pool_status();
    let mut text = state.db.metrics().render();
    let tokens = state.tokens.current();
    let named = auth::bearer(&headers)
        .and_then(|presented| tokens.check(presented))
        .is_some_and(|caller| caller.may(Scope::Metrics));
    if !named {
        text = without_token_names(text, &state.tokens.names());
    }
    ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], text).into_response()
}

/// The exposition with each configured token's name replaced by its position (`token-1`, …),
/// also where a token without a `source` of its own names the ingest source: who is on the
/// team is not for every scraper to read.
fn without_token_names(mut text: String, names: &[(String, bool)]) -> String {
    for (i, (name, is_source)) in names.iter().enumerate() {
        // As the text format writes a label value.
        let escaped = name
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        let labels = std::iter::once("token").chain(is_source.then_some("source"));
        for key in labels {
            let label = format!("{key}=\"{escaped}\"");
            if text.contains(&label) {
                text = text.replace(&label, &format!("{key}=\"token-{}\"", i + 1));
            }
        }
    }
    text
}

/// A path the server does not serve, answered with the paths it does: the usual mistakes are
/// an agent given the base URL (or `/mcp/`), and `push` given the MCP endpoint's URL.
async fn not_found(
    mcp_path: Arc<str>,
    pages: bool,
    method: Method,
    uri: axum::http::Uri,
) -> Response {
    let path = uri.path();
    // A person at the base URL is shown the pages; an agent posting there is told the path.
    if pages && path == "/" && method == Method::GET {
        return axum::response::Redirect::to("/ui/").into_response();
    }
    let hint = if path.trim_end_matches('/') == mcp_path.trim_end_matches('/') || path == "/" {
        format!("agents connect to {mcp_path} (exactly, without a trailing slash)")
    } else if path.starts_with(&*mcp_path) && path.contains("ingest") {
        "push takes the server's base URL (https://host), not the MCP endpoint's".to_owned()
    } else if path.starts_with("/ingest") {
        "the ingest API is POST /ingest/v1/status, /ingest/v1/append and /ingest/v1/batch; \
         push takes the server's base URL"
            .to_owned()
    } else {
        format!(
            "this server serves MCP at {mcp_path}, the ingest API under /ingest/v1/, \
             /healthz and /metrics"
        )
    };
    crate::http_error::HttpError::new(
        StatusCode::NOT_FOUND,
        crate::http_error::ErrorCode::NotFound,
        format!("no such path: {path}; {hint}"),
    )
    .into_response()
}

/// Cancels `token` on SIGTERM or SIGINT. Both handlers are installed before this returns, so a
/// signal that arrives once the caller announces it is serving always stops it gracefully.
pub(crate) fn cancel_on_signal(token: CancellationToken) -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = term.recv() => {}
        }
        tracing::info!("shutting down");
        token.cancel();
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_token_names_become_positions_as_the_text_format_writes_them() {
        let names = [("alice".to_owned(), true), ("q\"uote".to_owned(), false)];
        let text = "a{token=\"alice\",result=\"ok\"} 1\nb{token=\"q\\\"uote\"} 2\nc{token=\"alicex\"} 3\n\
                    d{source=\"alice\"} 4\ne{source=\"q\\\"uote\"} 5\n";
        assert_eq!(
            without_token_names(text.to_owned(), &names),
            "a{token=\"token-1\",result=\"ok\"} 1\nb{token=\"token-2\"} 2\nc{token=\"alicex\"} 3\n\
             d{source=\"token-1\"} 4\ne{source=\"q\\\"uote\"} 5\n"
        );
    }
}
