//! The ingest API: `POST /ingest/v1/status` (where each log stands), `POST /ingest/v1/append`
//! (bytes of one log from an offset) and `POST /ingest/v1/batch` (bytes of many logs, written
//! together), gzip- or zstd-encoded, for tokens with the `ingest` scope; and `GET
//! /ingest/v1/sources` (who pushed what) for any token, showing the sources it may see. Bounded: a size limit per request before and after decoding (413), and a
//! few requests at a time (429 with `Retry-After`, see [`super::guards::limit_ingest`]), so
//! ingest never starves searches.

use std::io::Read;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::guards::IngestSlot;
use crate::auth::{self, Caller};
use crate::db::DbError;
use crate::http_error::{ErrorCode, HttpError};
use crate::ingest::push::batch;
use crate::ingest::push::contract::{
    AppendQuery, Appended, BatchAnswer, BatchQuery, LogRefusal, MAX_STATUS_FILES, Outcome,
    SourcesAnswer, StatusAnswer, StatusRequest,
};
use crate::ingest::push::{Append, AppendError, Outcomes, PushIngest};
use crate::ingest::sources;
use crate::metrics::{IngestOutcome, Metrics};

/// The source recorded for pushes to a server without tokens, when the client names none.
const DEFAULT_SOURCE: &str = "push";
/// Seconds a client refused for a backend failure waits before trying again.
const RETRY_AFTER_BACKEND: &str = "5";

/// What the ingest routes share.
#[derive(Clone)]
pub(crate) struct IngestApi {
    pub(crate) push: Arc<PushIngest>,
    pub(crate) max_decoded_bytes: usize,
    pub(crate) metrics: Metrics,
}

/// The routes that take logs (with the `ingest` scope), all `POST`: their token is checked
/// before they take an ingest slot or their body is read (see
/// `server::FirstChecked`).
pub(crate) const WRITE_PATHS: [&str; 3] = [STATUS_PATH, APPEND_PATH, BATCH_PATH];
const STATUS_PATH: &str = "/ingest/v1/status";
const APPEND_PATH: &str = "/ingest/v1/append";
const BATCH_PATH: &str = "/ingest/v1/batch";

/// The ingest routes, only for the methods served (another method is a 405 for anyone). The
/// routes that take logs are guarded outside the router, before the ingest slots and body
/// limits ([`WRITE_PATHS`]): without that guard their handlers find no caller and answer 500.
/// `sources_guard` checks the token of `GET /ingest/v1/sources`.
pub(crate) fn routes<L>(api: IngestApi, sources_guard: L) -> Router
where
    L: tower::Layer<axum::routing::Route> + Clone + Send + Sync + 'static,
    L::Service: tower::Service<axum::extract::Request, Error = std::convert::Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    <L::Service as tower::Service<axum::extract::Request>>::Response: IntoResponse + 'static,
    <L::Service as tower::Service<axum::extract::Request>>::Future: Send + 'static,
{
    Router::new()
        .route(STATUS_PATH, post(status_post))
        .route(APPEND_PATH, post(append_post))
        .route(BATCH_PATH, post(batch_post))
        .route(
            "/ingest/v1/sources",
            get(sources_get).route_layer(sources_guard),
        )
        .with_state(api)
}

async fn sources_get(
    State(api): State<IngestApi>,
    Extension(caller): Extension<Caller>,
) -> Response {
    match sources::list(api.push.db(), &caller.visible_sources()).await {
        Ok(sources) => axum::Json(SourcesAnswer { sources }).into_response(),
        Err(error) => refused(&api.metrics, AppendError::Db(error)),
    }
}

async fn status_post(
    State(api): State<IngestApi>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> Response {
    let request: StatusRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(error) => {
            return HttpError::invalid(format!("the body is not a status request: {error}"))
                .into_response();
        }
    };
    if request.files.len() > MAX_STATUS_FILES {
        return HttpError::invalid(format!(
            "at most {MAX_STATUS_FILES} files per status request"
        ))
        .into_response();
    }
    let source = match source_of(&caller, request.source.as_deref()) {
        Ok(source) => source,
        Err(refused) => return refused.into_response(),
    };
    match api.push.status(&source, &request.files).await {
        Ok(files) => axum::Json(StatusAnswer { source, files }).into_response(),
        Err(error) => refused(&api.metrics, error),
    }
}

async fn append_post(
    State(api): State<IngestApi>,
    Extension(caller): Extension<Caller>,
    Extension(slot): Extension<IngestSlot>,
    params: Result<Query<AppendQuery>, QueryRejection>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    finish_apart(slot, async move {
        let (params, source, bytes) = match accept(&api, &caller, params, &headers, &body).await {
            Ok(accepted) => accepted,
            Err(refused) => return refused,
        };
        let append = Append {
            log: params.log(),
            offset: params.offset,
            replace: params.replace,
            bytes: &bytes,
        };
        match api
            .push
            .append_all(&source, &bytes, std::slice::from_ref(&append))
            .await
        {
            Ok(mut outcomes) => match outcomes.pop() {
                Some(Ok(appended)) => {
                    api.record(&source, &appended);
                    axum::Json(appended).into_response()
                }
                Some(Err(error)) => refused(&api.metrics, error),
                None => refused(&api.metrics, AppendError::Internal("no outcome".into())),
            },
            Err(error) => refused(&api.metrics, error),
        }
    })
    .await
}

/// Appends to many logs in one request (see [`batch`] for the body): each log's outcome is
/// listed in order; a log refused on its own does not stop the others.
async fn batch_post(
    State(api): State<IngestApi>,
    Extension(caller): Extension<Caller>,
    Extension(slot): Extension<IngestSlot>,
    params: Result<Query<BatchQuery>, QueryRejection>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    finish_apart(slot, async move {
        let (_, source, bytes) = match accept(&api, &caller, params, &headers, &body).await {
            Ok(accepted) => accepted,
            Err(refused) => return refused,
        };
        let appends = match batch::decode(&bytes) {
            Ok(appends) => appends,
            Err(message) => {
                api.metrics.observe_ingest(IngestOutcome::Invalid);
                return HttpError::invalid(message).into_response();
            }
        };
        match api.push.append_all(&source, &bytes, &appends).await {
            Ok(outcomes) => {
                let logs = answer_each(&api, &source, outcomes);
                tracing::info!(
                    %source,
                    logs = logs.len(),
                    bytes = bytes.len(),
                    "pushed batch written"
                );
                axum::Json(BatchAnswer { source, logs }).into_response()
            }
            Err(error) => refused(&api.metrics, error),
        }
    })
    .await
}

/// Runs an append on a task of its own, which keeps the request's ingest slot: a request the
/// time limit ends (its client told to retry) goes on to decide and write what it brought,
/// so the resend finds it stored, instead of starting over and timing out again.
async fn finish_apart(
    slot: IngestSlot,
    work: impl std::future::Future<Output = Response> + Send + 'static,
) -> Response {
    let permit = slot.take();
    let task = tokio::spawn(async move {
        let response = work.await;
        drop(permit);
        response
    });
    match task.await {
        Ok(response) => response,
        Err(error) => HttpError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::InternalError,
            error.to_string(),
        )
        .into_response(),
    }
}

/// Each log's outcome, counted in the metrics.
fn answer_each(api: &IngestApi, source: &str, outcomes: Outcomes) -> Vec<Outcome> {
    outcomes
        .into_iter()
        .map(|outcome| match outcome {
            Ok(appended) => {
                api.record(source, &appended);
                Outcome::Appended(appended)
            }
            Err(error) => {
                let (_, outcome, body) = describe_error(&error);
                api.metrics.observe_ingest(outcome);
                Outcome::Refused(body)
            }
        })
        .collect()
}

impl IngestApi {
    /// Counts an append (and its bytes and events, when it wrote something).
    fn record(&self, source: &str, appended: &Appended) {
        if appended.future_events > 0 {
            tracing::warn!(
                %source,
                events = appended.future_events,
                "pushed events dated in the future: shown at the time they were received (is the laptop's clock right?)"
            );
            self.metrics.future_events(source, appended.future_events);
        }
        if appended.duplicate {
            self.metrics.observe_ingest(IngestOutcome::Duplicate);
            return;
        }
        self.metrics.observe_ingest(IngestOutcome::Ok);
        let now = crate::text::now_ms() as f64 / 1000.0;
        self.metrics
            .ingested(source, appended.bytes, appended.events, now);
    }
}

/// Query parameters that may name the source to write as.
trait AsksSource {
    fn source(&self) -> Option<&str>;
}

impl AsksSource for AppendQuery {
    fn source(&self) -> Option<&str> {
        self.source.as_deref()
    }
}

impl AsksSource for BatchQuery {
    fn source(&self) -> Option<&str> {
        self.source.as_deref()
    }
}

/// An ingest request's query parameters, the source it writes as and its decoded body, or the
/// answer refusing it.
async fn accept<P: AsksSource>(
    api: &IngestApi,
    caller: &Caller,
    params: Result<Query<P>, QueryRejection>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<(P, String, Bytes), Response> {
    let Query(params) = params.map_err(|rejection| {
        api.metrics.observe_ingest(IngestOutcome::Invalid);
        HttpError::invalid(rejection.body_text()).into_response()
    })?;
    let source = source_of(caller, params.source()).map_err(IntoResponse::into_response)?;
    match decode(headers, body, api.max_decoded_bytes).await {
        Ok(bytes) => Ok((params, source, bytes)),
        Err(refused) => {
            let outcome = if refused.body.error == ErrorCode::PayloadTooLarge {
                IngestOutcome::TooLarge
            } else {
                IngestOutcome::Invalid
            };
            api.metrics.observe_ingest(outcome);
            Err(refused.into_response())
        }
    }
}

/// The source a caller writes as: its token's, or (without tokens) the one it names.
fn source_of(caller: &Caller, asked: Option<&str>) -> Result<String, HttpError> {
    match (&caller.ingest_source, asked) {
        (Some(own), Some(asked)) if own != asked => Err(auth::forbidden(format!(
            "token {:?} writes as source {own:?}, not {asked:?}",
            caller.name
        ))),
        (Some(own), _) => Ok(own.clone()),
        (None, Some(asked)) if crate::config::is_source_name(asked) => Ok(asked.to_owned()),
        (None, Some(asked)) => Err(HttpError::invalid(format!(
            "{asked:?} is not a source name"
        ))),
        (None, None) => Ok(DEFAULT_SOURCE.to_owned()),
    }
}

/// The request body, decoded per `Content-Encoding` (identity, gzip or zstd), within `limit`.
async fn decode(headers: &HeaderMap, body: &Bytes, limit: usize) -> Result<Bytes, HttpError> {
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    if !matches!(encoding.as_str(), "identity" | "gzip" | "x-gzip" | "zstd") {
        return Err(HttpError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::UnsupportedEncoding,
            format!("Content-Encoding {encoding:?} is not identity, gzip or zstd"),
        ));
    }
    // A plain body is used as it came: no copy.
    if encoding == "identity" {
        return if body.len() > limit {
            Err(too_large(limit))
        } else {
            Ok(body.clone())
        };
    }
    let body = body.clone();
    let decoded = tokio::task::spawn_blocking(move || {
        // Sized from what the body says it holds (zstd's frame header, gzip's trailer), within
        // the limit: a buffer grown by doubling would hold up to twice the body, and copy it.
        let mut out = Vec::with_capacity(decoded_size_hint(&encoding, &body).min(limit + 1));
        let bound = limit as u64 + 1;
        // Every gzip member and every zstd frame is read; bytes after them that are neither
        // refuse the body (they are not silently dropped).
        let read = match encoding.as_str() {
            "zstd" => zstd::stream::read::Decoder::new(&body[..])
                .and_then(|decoder| decoder.take(bound).read_to_end(&mut out)),
            _ => flate2::read::MultiGzDecoder::new(&body[..])
                .take(bound)
                .read_to_end(&mut out),
        };
        read.map(|_| Bytes::from(out))
    })
    .await
    .map_err(|_| HttpError::invalid("the body could not be decoded"))?;
    match decoded {
        Ok(bytes) if bytes.len() > limit => Err(too_large(limit)),
        Ok(bytes) => Ok(bytes),
        Err(error) => Err(HttpError::invalid(format!(
            "the body could not be decoded: {error}"
        ))),
    }
}

/// 413: a body past the decoded limit.
fn too_large(limit: usize) -> HttpError {
    HttpError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::PayloadTooLarge,
        format!("decoded request bodies are limited to {limit} bytes"),
    )
}

/// What a compressed body says its content's size is: the first zstd frame's content size, or
/// the last gzip member's size (modulo 4 GiB); 0 when it does not say.
fn decoded_size_hint(encoding: &str, body: &[u8]) -> usize {
    let hint = if encoding == "zstd" {
        zstd::zstd_safe::get_frame_content_size(body)
            .ok()
            .flatten()
            .unwrap_or(0)
    } else {
        body.len().checked_sub(4).map_or(0, |at| {
            u64::from(u32::from_le_bytes(
                body[at..].try_into().unwrap_or_default(),
            ))
        })
    };
    usize::try_from(hint).unwrap_or(0)
}

/// The status, metrics outcome and JSON body of a refused append.
fn describe_error(error: &AppendError) -> (StatusCode, IngestOutcome, LogRefusal) {
    let (status, code, outcome) = match error {
        AppendError::Invalid(_) => (
            StatusCode::BAD_REQUEST,
            ErrorCode::InvalidRequest,
            IngestOutcome::Invalid,
        ),
        AppendError::OffsetMismatch { .. } => (
            StatusCode::CONFLICT,
            ErrorCode::OffsetMismatch,
            IngestOutcome::OffsetMismatch,
        ),
        AppendError::ContentMismatch { .. } => (
            StatusCode::CONFLICT,
            ErrorCode::ContentMismatch,
            IngestOutcome::ContentMismatch,
        ),
        AppendError::Db(DbError::Busy | DbError::Deadline | DbError::Unavailable(_)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Unavailable,
            IngestOutcome::Failed,
        ),
        // Counted apart: an upgrade is not a failure to alert on.
        AppendError::Db(DbError::Migrating) => (
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Unavailable,
            IngestOutcome::Migrating,
        ),
        AppendError::Db(_) | AppendError::Internal(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::InternalError,
            IngestOutcome::Failed,
        ),
    };
    let mut body = LogRefusal {
        error: code,
        message: error.to_string(),
        received: None,
        generation: None,
    };
    match error {
        AppendError::OffsetMismatch {
            received,
            generation,
        }
        | AppendError::ContentMismatch {
            received,
            generation,
        } => {
            body.received = Some(*received);
            body.generation = Some(*generation);
        }
        AppendError::Db(DbError::Migrating) => {
            body.message =
                "the session store is being migrated to a new schema; retry shortly".into();
        }
        AppendError::Db(detail) => {
            tracing::warn!(error = %detail, "an ingest request failed");
            body.message = "the session store is unavailable; retry shortly".into();
        }
        AppendError::Internal(detail) => {
            tracing::warn!(error = %detail, "an ingest request failed");
            body.message = "internal error; the server log has the details".into();
        }
        AppendError::Invalid(_) => {}
    }
    (status, outcome, body)
}

/// The answer to a refused append or status request.
fn refused(metrics: &Metrics, error: AppendError) -> Response {
    let (status, outcome, body) = describe_error(&error);
    metrics.observe_ingest(outcome);
    let mut response = (status, axum::Json(body)).into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response.headers_mut().insert(
            header::RETRY_AFTER,
            header::HeaderValue::from_static(RETRY_AFTER_BACKEND),
        );
    }
    response
}
