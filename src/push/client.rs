//! The ingest API client of `push`: HTTP(S) with the bearer token, zstd bodies, and retries
//! with growing pauses while the server is unreachable or overloaded.

use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow};
use axum::http::Method;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};

use crate::ingest::push::Append;
use crate::ingest::push::batch;
use crate::ingest::push::contract::{
    BatchAnswer, BatchQuery, ErrorBody, ErrorCode, LogName, LogStatus, Outcome, SourceStatus,
    SourcesAnswer, StatusAnswer, StatusRequest,
};

/// A request that cannot get an answer head in this time is tried again.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The first pause before a retry; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(250);
const MAX_PAUSE: Duration = Duration::from_secs(30);
/// zstd level of request bodies: fast, and most of zstd's ratio on JSON lines.
const ZSTD_LEVEL: i32 = 3;

/// Why a request failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Nothing more can be pushed (no access, or the server stayed unreachable).
    Fatal(anyhow::Error),
    /// This log cannot be pushed now; the others can.
    Log(anyhow::Error),
    /// The server answered busy, and the caller chose to give way rather than retry.
    GaveWay,
    /// The request outlasted the server's time limit (or this client's): a smaller one may
    /// not.
    Slow,
    /// The server refused the token (401, 403): nothing can be pushed with it.
    Refused(anyhow::Error),
}

impl Failure {
    pub(crate) fn into_error(self) -> anyhow::Error {
        match self {
            Self::Fatal(error) | Self::Log(error) | Self::Refused(error) => error,
            Self::GaveWay => anyhow!("the server was busy"),
            Self::Slow => anyhow!("the server did not answer in time"),
        }
    }
}

/// A refusal by the server, with its status and message.
#[derive(Debug, thiserror::Error)]
#[error("the server refused the request ({status}): {message}")]
pub(crate) struct Refused {
    pub(crate) status: u16,
    pub(crate) message: String,
}

/// A client of one server's ingest API.
pub struct Client {
    http: crate::http_client::Https,
    base: String,
    token: Option<String>,
    /// The source to write as, for a server without tokens.
    source: Option<String>,
    retry_for: Duration,
}

impl Client {
    pub fn new(
        server: &str,
        token: Option<&str>,
        source: Option<&str>,
        retry_for: Duration,
    ) -> anyhow::Result<Self> {
        let mut base = server.trim_end_matches('/').to_owned();
        anyhow::ensure!(
            base.starts_with("http://") || base.starts_with("https://"),
            "--server must be an http:// or https:// URL, not {server:?}"
        );
        // The URL agents are given (the MCP endpoint) is a common mistake here: push takes the
        // server's base URL, and is told so.
        if let Some(stripped) = base.strip_suffix("/mcp") {
            eprintln!(
                "note: --server is the server's base URL, not its MCP endpoint: using {stripped}"
            );
            base = stripped.to_owned();
        }
        Ok(Self {
            http: crate::http_client::https(CONNECT_TIMEOUT),
            base,
            token: token.map(str::to_owned),
            source: source.map(str::to_owned),
            retry_for,
        })
    }

    /// Where each log stands on the server.
    pub(crate) async fn status(&self, logs: &[LogName]) -> Result<Vec<LogStatus>, Failure> {
        let request = StatusRequest {
            files: logs.to_vec(),
            source: self.source.clone(),
        };
        let body = serde_json::to_vec(&request).map_err(|e| Failure::Fatal(e.into()))?;
        let url = format!("{}/ingest/v1/status", self.base);
        let answer = self
            .send(
                &url,
                "application/json",
                None,
                Bytes::from(body),
                None,
                false,
            )
            .await?;
        let answer: StatusAnswer = serde_json::from_slice(&answer).map_err(|e| {
            Failure::Fatal(anyhow!("the server's status answer is not understood: {e}"))
        })?;
        Ok(answer.files)
    }

    /// Sends a batch of appends; returns each log's outcome, in order, and the size sent
    /// (compressed). At each busy answer `give_way` is asked whether to stop retrying
    /// ([`Failure::GaveWay`]).
    pub(crate) async fn batch(
        &self,
        appends: &[Append<'_>],
        give_way: &(dyn Fn() -> bool + Sync),
        may_shrink: bool,
    ) -> Result<(Vec<Outcome>, u64), Failure> {
        let query = serde_urlencoded::to_string(BatchQuery {
            source: self.source.clone(),
        })
        .map_err(|e| Failure::Fatal(e.into()))?;
        let mut url = format!("{}/ingest/v1/batch", self.base);
        if !query.is_empty() {
            url = format!("{url}?{query}");
        }
        let body = batch::encode(appends);
        // Compressing megabytes is CPU work: off the async runtime, which may be serving too.
        let compressed =
            tokio::task::spawn_blocking(move || zstd::bulk::compress(&body, ZSTD_LEVEL))
                .await
                .map_err(|e| Failure::Fatal(e.into()))?
                .map_err(|e| Failure::Log(e.into()))?;
        let sent = compressed.len() as u64;
        let answer = self
            .send(
                &url,
                "application/octet-stream",
                Some("zstd"),
                Bytes::from(compressed),
                Some(give_way),
                may_shrink,
            )
            .await?;
        let logs = serde_json::from_slice::<BatchAnswer>(&answer)
            .ok()
            .map(|answer| answer.logs)
            .filter(|logs: &Vec<Outcome>| logs.len() == appends.len())
            .ok_or_else(|| {
                Failure::Fatal(anyhow!("the server's batch answer is not understood"))
            })?;
        Ok((logs, sent))
    }

    /// POSTs `body` until it gets a final answer: the body of a 2xx, or the refusal; or, at a
    /// busy answer, until `give_way` says to stop; or, when `may_shrink`, at an answer saying
    /// the request took too long ([`Failure::Slow`]).
    async fn send(
        &self,
        url: &str,
        content_type: &str,
        encoding: Option<&str>,
        body: Bytes,
        give_way: Option<&(dyn Fn() -> bool + Sync)>,
        may_shrink: bool,
    ) -> Result<Bytes, Failure> {
        // A duration too long to add to now is "for ever" (`push --watch`).
        let give_up = Instant::now().checked_add(self.retry_for);
        let mut pause = FIRST_PAUSE;
        loop {
            let outcome = self
                .exchange(Method::POST, url, content_type, encoding, body.clone())
                .await;
            let slow = match &outcome {
                Ok((status, _, answer)) => {
                    matches!(status, 503 | 504)
                        && ErrorBody::parse(answer).is_some_and(|b| b.error == ErrorCode::Timeout)
                }
                Err(error) => error.to_string().contains(NO_ANSWER),
            };
            if slow && may_shrink {
                tracing::info!(
                    "the request took longer than the server's time limit; sending less at once"
                );
                return Err(Failure::Slow);
            }
            let wait = match outcome {
                Ok((status, _, answer)) if (200..300).contains(&status) => return Ok(answer),
                Ok((status, retry_after, _)) if matches!(status, 429 | 502 | 503 | 504) => {
                    // Too many requests at once, or a request that could not finish in time
                    // (the server's timeout, which includes a slow upload, answers 503).
                    if give_way.is_some_and(|give_way| give_way()) {
                        return Err(Failure::GaveWay);
                    }
                    tracing::info!(status, "the server is busy or unavailable; retrying");
                    retry_after.unwrap_or(pause)
                }
                Ok((status, _, answer)) => {
                    let refused = Refused {
                        status,
                        message: message_of(&answer),
                    };
                    return Err(if matches!(status, 401 | 403) {
                        Failure::Refused(refused.into())
                    } else {
                        Failure::Log(refused.into())
                    });
                }
                Err(error) => {
                    tracing::info!(error = %format!("{error:#}"), "cannot reach the server; retrying");
                    pause
                }
            };
            if give_up.is_some_and(|give_up| Instant::now() + wait > give_up) {
                return Err(Failure::Fatal(anyhow!(
                    "the server at {} did not accept the request within {} s",
                    self.base,
                    self.retry_for.as_secs()
                )));
            }
            tokio::time::sleep(jitter(wait)).await;
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    /// Each source's standing on the server, as far as the token may see.
    pub async fn sources(&self) -> anyhow::Result<Vec<SourceStatus>> {
        let url = format!("{}/ingest/v1/sources", self.base);
        let (status, _, answer) = self
            .exchange(Method::GET, &url, "application/json", None, Bytes::new())
            .await
            .with_context(|| format!("cannot reach {}", self.base))?;
        if !(200..300).contains(&status) {
            return Err(Refused {
                status,
                message: message_of(&answer),
            }
            .into());
        }
        let answer: SourcesAnswer = serde_json::from_slice(&answer)
            .context("the server's sources answer is not understood")?;
        Ok(answer.sources)
    }

    /// One request: the status, `Retry-After` and body of the answer.
    async fn exchange(
        &self,
        method: Method,
        url: &str,
        content_type: &str,
        encoding: Option<&str>,
        body: Bytes,
    ) -> anyhow::Result<(u16, Option<Duration>, Bytes)> {
        let mut request = axum::http::Request::builder()
            .method(method)
            .uri(url)
            .header("content-type", content_type);
        if let Some(encoding) = encoding {
            request = request.header("content-encoding", encoding);
        }
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let request = request.body(Full::new(body)).context("bad request")?;
        let response = tokio::time::timeout(REQUEST_TIMEOUT, self.http.request(request))
            .await
            .context(NO_ANSWER)??;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let body = tokio::time::timeout(REQUEST_TIMEOUT, response.into_body().collect())
            .await
            .context("the answer did not arrive in time")??
            .to_bytes();
        Ok((status, retry_after, body))
    }
}

/// What a request that got no answer head in [`REQUEST_TIMEOUT`] fails with.
const NO_ANSWER: &str = "no answer in time";

/// The `message` of a JSON error body, or the body's start.
fn message_of(body: &[u8]) -> String {
    ErrorBody::parse(body).map_or_else(
        || String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
        |b| b.message,
    )
}

/// `wait`, give or take a fifth, so clients that failed together do not retry together.
fn jitter(wait: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let factor = 0.8 + f64::from(nanos % 1000) / 2500.0;
    wait.mul_f64(factor)
}
