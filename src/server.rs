//! The HTTP surface: the MCP endpoint (rmcp Streamable HTTP behind bearer-token auth and
//! Host/Origin checks), `/healthz`, `/metrics`, and the layers every request passes through.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::auth::{self, AuthState, Tokens};
use crate::config::Config;
use crate::db::{Db, DbError};
use crate::mcp::McpServer;
use crate::migrate;
use crate::tools::Tools;

/// Shared by the HTTP handlers.
#[derive(Clone)]
struct AppState {
    db: Db,
    health_timeout: Duration,
}

/// Builds the application router. `addr` is the bound address (for the service's own origin).
pub(crate) fn router(
    config: &Config,
    db: Db,
    tools: Arc<Tools>,
    addr: SocketAddr,
    shutdown: &CancellationToken,
) -> Router {
    let server = &config.server;
    let auth = AuthState {
        tokens: Arc::new(Tokens::new(&config.auth.tokens)),
        metrics: db.metrics().clone(),
    };
    let state = AppState {
        db,
        health_timeout: Duration::from_millis(config.clickhouse.health_timeout_ms),
    };
    let (hosts, origins) = allowed_hosts_and_origins(config, addr);
    let keep_alive = (server.stateful && server.sse_keep_alive_secs > 0)
        .then(|| Duration::from_secs(server.sse_keep_alive_secs));
    let mcp_config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(server.stateful)
        .with_json_response(!server.stateful)
        .with_sse_keep_alive(keep_alive)
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(server.request_body_limit_bytes as usize)
        .with_cancellation_token(shutdown.child_token());
    let handler = McpServer::new(tools);
    let mcp = if server.stateful {
        mcp_route(
            &server.mcp_path,
            handler,
            LocalSessionManager::default(),
            mcp_config,
        )
    } else {
        mcp_route(
            &server.mcp_path,
            handler,
            NeverSessionManager::default(),
            mcp_config,
        )
    };
    let mcp = mcp.layer(middleware::from_fn_with_state(auth, auth::authenticate));
    Router::new()
        .route("/healthz", get(healthz_get))
        .route("/metrics", get(metrics_get))
        .merge(mcp)
        .fallback(not_found)
        .with_state(state.clone())
        // Outermost first. The timeout covers reading the body (a stalled upload ends in 503);
        // the metrics see every status, 413s and timeouts included.
        .layer(
            ServiceBuilder::new()
                .layer(CatchPanicLayer::new())
                .layer(TraceLayer::new_for_http())
                .layer(middleware::from_fn_with_state(state, observe))
                .layer(TimeoutLayer::with_status_code(
                    StatusCode::SERVICE_UNAVAILABLE,
                    Duration::from_secs(server.request_timeout_secs),
                ))
                .layer(middleware::from_fn_with_state(
                    server.request_body_limit_bytes as usize,
                    limit_body,
                )),
        )
}

/// The rmcp Streamable HTTP service at exactly `path`, with `manager` deciding on sessions.
fn mcp_route<M: SessionManager>(
    path: &str,
    handler: McpServer,
    manager: M,
    config: StreamableHttpServerConfig,
) -> Router<AppState> {
    let service =
        StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(manager), config);
    Router::new().route_service(path, service)
}

/// Host names and origins the MCP endpoint accepts: loopback, the bound address, and config.
fn allowed_hosts_and_origins(config: &Config, addr: SocketAddr) -> (Vec<String>, Vec<String>) {
    let port = addr.port();
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    let mut origins: Vec<String> = vec![
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        format!("http://[::1]:{port}"),
    ];
    if !addr.ip().is_unspecified() && !addr.ip().is_loopback() {
        origins.push(format!("http://{}", SocketAddr::new(addr.ip(), port)));
        hosts.push(addr.ip().to_string());
    }
    hosts.extend(config.server.allowed_hosts.iter().cloned());
    origins.extend(config.server.allowed_origins.iter().cloned());
    (hosts, origins)
}

/// Reads every request's whole body, up to the limit, before any handler sees it: one 413 with a
/// JSON body whether the size was declared (`Content-Length`, refused before reading) or only
/// discovered (a chunked body that grows past it).
async fn limit_body(State(limit): State<usize>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let declared = axum::body::HttpBody::size_hint(&body).lower();
    if declared > limit as u64 {
        return payload_too_large(limit);
    }
    match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Err(error) => {
            let too_large =
                std::iter::successors(Some(&error as &(dyn std::error::Error + 'static)), |e| {
                    e.source()
                })
                .any(|e| e.is::<http_body_util::LengthLimitError>());
            if too_large {
                payload_too_large(limit)
            } else {
                tracing::debug!(%error, "unreadable request body");
                (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({ "error": "bad_request", "message": "the request body could not be read" })),
                )
                    .into_response()
            }
        }
    }
}

fn payload_too_large(limit: usize) -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        axum::Json(json!({
            "error": "payload_too_large",
            "message": format!("request bodies are limited to {limit} bytes"),
        })),
    )
        .into_response()
}

/// Counts and times every request by route (never the raw path), method and status.
async fn observe(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let matched = request.extensions().get::<MatchedPath>().cloned();
    let method = request.method().clone();
    let response = next.run(request).await;
    let route = match &matched {
        None => "unmatched",
        Some(m) => match m.as_str().trim_end_matches('/') {
            "" => "/",
            route => route,
        },
    };
    state.db.metrics().observe_http(
        route,
        method.as_str(),
        response.status().as_str(),
        started.elapsed().as_secs_f64(),
    );
    response
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
    let body = json!({
        "status": if status == StatusCode::OK { "ok" } else { "unavailable" },
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

async fn metrics_get(State(state): State<AppState>) -> Response {
    state.db.export_pool_status();
    (
        [(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)],
        state.db.metrics().render(),
    )
        .into_response()
}

async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({ "error": "not_found" })),
    )
        .into_response()
}

/// Serves until `shutdown` is cancelled, then lets in-flight requests finish for `grace`.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: CancellationToken,
    grace: Duration,
) -> std::io::Result<()> {
    let stop = shutdown.clone();
    let server =
        axum::serve(listener, app).with_graceful_shutdown(async move { stop.cancelled().await });
    let mut server = tokio::spawn(server.into_future());
    tokio::select! {
        finished = &mut server => return finished.unwrap_or_else(|e| Err(std::io::Error::other(e))),
        _ = shutdown.cancelled() => {}
    }
    match tokio::time::timeout(grace, server).await {
        Ok(joined) => joined.unwrap_or_else(|e| Err(std::io::Error::other(e))),
        Err(_) => {
            tracing::warn!(
                grace_secs = grace.as_secs(),
                "in-flight requests did not finish in time; stopping anyway"
            );
            Ok(())
        }
    }
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
