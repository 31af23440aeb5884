//! Layers every request passes before a handler: a well-formed `Host`, a bounded body, and
//! the request metrics (labelled by route and known method only, so clients cannot grow them).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::body::{Body, HttpBody as _};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt as _;
use tokio::sync::Semaphore;

use crate::http_error::{ErrorCode, HttpError};
use crate::metrics::{IngestOutcome, Metrics};

/// A refused body is read on (and thrown away) up to this many bytes while and after the 413 is
/// sent, so a client that is still sending sees the 413 instead of a reset connection.
const DRAIN_BYTES: u64 = 64 * 1024 * 1024;
/// And for at most this long.
const DRAIN_TIME: Duration = Duration::from_secs(5);

/// The ingest API's requests in progress, from their first byte to their answer.
#[derive(Clone)]
pub(crate) struct IngestSlots {
    pub(crate) slots: Arc<Semaphore>,
    pub(crate) metrics: Metrics,
}

/// Takes one of the ingest API's few slots for the whole request (its upload included, which
/// also bounds the memory bodies hold), or answers 429 with `Retry-After`: ingest cannot take
/// more than its share of the server, and never ClickHouse query slots searches need.
pub(crate) async fn limit_ingest(
    State(ingest): State<IngestSlots>,
    mut request: Request,
    next: Next,
) -> Response {
    if !request.uri().path().starts_with(INGEST_PREFIX) {
        return next.run(request).await;
    }
    let Ok(slot) = ingest.slots.try_acquire_owned() else {
        ingest.metrics.observe_ingest(IngestOutcome::Busy);
        return HttpError::new(
            StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::Busy,
            "the server is handling as many ingest requests as it takes; retry shortly",
        )
        .with_header(header::RETRY_AFTER, "1")
        .into_response();
    };
    // The handler takes the slot with the work it hands to a task of its own: work that
    // outlives its request (past the time limit) keeps its slot until it ends.
    let slot = IngestSlot(Arc::new(std::sync::Mutex::new(Some(slot))));
    request.extensions_mut().insert(slot.clone());
    let response = next.run(request).await;
    drop(slot);
    response
}

/// The ingest slot a request holds; the work it starts takes it over.
#[derive(Clone)]
pub(crate) struct IngestSlot(Arc<std::sync::Mutex<Option<tokio::sync::OwnedSemaphorePermit>>>);

impl IngestSlot {
    /// The slot, for the work to hold until it ends.
    pub(crate) fn take(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.0.lock().expect("ingest slot").take()
    }
}

/// Paths of the ingest API.
pub(crate) const INGEST_PREFIX: &str = "/ingest/";

/// How long a request may take to be answered, its body's upload included.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeLimits {
    /// The MCP endpoint, `/healthz` and `/metrics`.
    pub(crate) requests: Duration,
    /// The ingest API: its uploads are megabytes, and a request whose deadline passes goes
    /// on to write what it decided (see the handlers), so the limit only frees the client.
    pub(crate) ingest: Duration,
}

/// Answers `503` (with `Retry-After`) when a request outlasts its time limit.
pub(crate) async fn time_limit(
    State(limits): State<TimeLimits>,
    request: Request,
    next: Next,
) -> Response {
    let limit = if request.uri().path().starts_with(INGEST_PREFIX) {
        limits.ingest
    } else {
        limits.requests
    };
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => HttpError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Timeout,
            format!(
                "the request was not answered within {} s; retry (the ingest API finishes \
                 what it began: a resent range is then recognised)",
                limit.as_secs()
            ),
        )
        .with_header(header::RETRY_AFTER, "1")
        .into_response(),
    }
}

/// RFC 9112 §3.2: an HTTP/1.1 request needs exactly one `Host` field line.
pub(crate) async fn require_one_host(request: Request, next: Next) -> Response {
    let hosts = request.headers().get_all(header::HOST).iter().count();
    let required = request.version() == Version::HTTP_11;
    if hosts > 1 || (required && hosts == 0) {
        return HttpError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::BadRequest,
            "an HTTP/1.1 request needs exactly one Host header",
        )
        .closing()
        .into_response();
    }
    next.run(request).await
}

/// How request bodies are bounded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimits {
    pub(crate) max_bytes: usize,
    /// The limit of the ingest API, whose bodies are logs.
    pub(crate) ingest_max_bytes: usize,
    /// The longest pause between two pieces of a body.
    pub(crate) stall: Duration,
}

/// Reads every request's whole body, up to the limit, before any handler sees it: one 413
/// with a JSON body whether the size was declared (`Content-Length`) or only discovered (a
/// chunked body that grows past it). A body that pauses longer than `stall` is a 408.
pub(crate) async fn limit_body(
    State(limits): State<BodyLimits>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let max_bytes = if parts.uri.path().starts_with(INGEST_PREFIX) {
        limits.ingest_max_bytes
    } else {
        limits.max_bytes
    };
    let declared = body.size_hint().lower();
    if declared > max_bytes as u64 {
        if declared <= DRAIN_BYTES {
            tokio::spawn(drain(body));
        }
        return payload_too_large(max_bytes);
    }
    match read_up_to(body, max_bytes, limits.stall).await {
        Ok(bytes) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Err(BodyError::TooLarge(rest)) => {
            tokio::spawn(drain(rest));
            payload_too_large(max_bytes)
        }
        Err(BodyError::Stalled) => HttpError::new(
            StatusCode::REQUEST_TIMEOUT,
            ErrorCode::RequestTimeout,
            "the request body stalled",
        )
        .closing()
        .into_response(),
        Err(BodyError::Unreadable(error)) => {
            tracing::debug!(%error, "unreadable request body");
            HttpError::new(
                StatusCode::BAD_REQUEST,
                ErrorCode::BadRequest,
                "the request body could not be read",
            )
            .closing()
            .into_response()
        }
    }
}

enum BodyError {
    /// Past the limit; the rest of the body is still to be read.
    TooLarge(Body),
    /// The body timeout fired.
    Stalled,
    Unreadable(axum::Error),
}

async fn read_up_to(mut body: Body, max_bytes: usize, stall: Duration) -> Result<Bytes, BodyError> {
    let mut bytes = BytesMut::new();
    loop {
        let frame = match tokio::time::timeout(stall, body.frame()).await {
            Err(_) => return Err(BodyError::Stalled),
            Ok(None) => return Ok(bytes.freeze()),
            Ok(Some(frame)) => frame.map_err(BodyError::Unreadable)?,
        };
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > max_bytes {
                return Err(BodyError::TooLarge(body));
            }
            bytes.extend_from_slice(&data);
        }
    }
}

/// Reads and discards what is left of a refused body, within [`DRAIN_BYTES`] and
/// [`DRAIN_TIME`], so a client still sending it sees the answer instead of a reset.
pub(crate) async fn drain(mut body: Body) {
    let drained = async {
        let mut seen = 0u64;
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(data) = frame.data_ref() {
                seen += data.len() as u64;
                if seen > DRAIN_BYTES {
                    return;
                }
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, drained).await;
}

fn payload_too_large(limit: usize) -> Response {
    // The client may still be sending; after this answer the connection is not reused.
    HttpError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::PayloadTooLarge,
        format!("request bodies are limited to {limit} bytes"),
    )
    .closing()
    .into_response()
}

/// Counts and times every request by route (never the raw path), method (one of the
/// standard ones, or `other`) and status.
pub(crate) async fn observe(
    State(metrics): State<Metrics>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let matched = request.extensions().get::<MatchedPath>().cloned();
    let method = method_label(request.method());
    let response = next.run(request).await;
    let route = match &matched {
        None => "unmatched",
        Some(matched) => match matched.as_str().trim_end_matches('/') {
            "" => "/",
            route => route,
        },
    };
    let status = response.status();
    metrics.observe_http(
        route,
        method,
        status.as_str(),
        started.elapsed().as_secs_f64(),
    );
    if status.is_server_error() && route != "/healthz" && SERVER_ERRORS.admit() {
        tracing::warn!(route, status = status.as_u16(), "request failed");
    }
    response
}

/// Server errors logged at most once a second: an outage must not flood the log.
static SERVER_ERRORS: LogLimiter = LogLimiter::per_ms(1000);

/// Admits one event per period: a log line repeated by every refused request would flood the
/// log.
pub(crate) struct LogLimiter {
    /// Milliseconds since the epoch of the last admitted event.
    last_ms: AtomicU64,
    period_ms: u64,
}

impl LogLimiter {
    pub(crate) const fn per_ms(period_ms: u64) -> Self {
        Self {
            last_ms: AtomicU64::new(0),
            period_ms,
        }
    }

    pub(crate) fn admit(&self) -> bool {
        let now = crate::text::now_ms() as u64;
        let last = self.last_ms.load(Ordering::Relaxed);
        now >= last + self.period_ms
            && self
                .last_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

/// The metrics label of a method: the standard methods by name, anything else `other`.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_log_limiter_admits_once_a_second() {
        let limiter = LogLimiter::per_ms(1000);
        assert!(limiter.admit());
        assert!(!limiter.admit());
        assert!(!limiter.admit());
    }

    #[test]
    fn test_unknown_methods_share_one_label() {
        assert_eq!(method_label(&Method::POST), "POST");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
        assert_eq!(method_label(&Method::CONNECT), "other");
    }
}
