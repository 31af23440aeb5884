//! Driving the running service over HTTP MCP, and exact percentiles from raw samples.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Serialize;
use serde_json::{Value, json};

/// Latency percentiles over raw samples, in milliseconds.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Percentiles {
    pub samples: usize,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub mean: f64,
    pub max: f64,
}

impl Percentiles {
    /// Nearest-rank percentiles: the smallest sample with at least p% of samples at or below it.
    pub(crate) fn of(mut samples: Vec<f64>) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort_by(f64::total_cmp);
        let rank = |p: f64| {
            samples
                [((p / 100.0 * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1]
        };
        Self {
            samples: samples.len(),
            p50: rank(50.0),
            p95: rank(95.0),
            p99: rank(99.0),
            mean: samples.iter().sum::<f64>() / samples.len() as f64,
            max: *samples.last().expect("not empty"),
        }
    }
}

/// What one workload measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Measured {
    pub client: Percentiles,
    /// The server's own `performance.elapsed_ms`.
    pub server: Percentiles,
    /// Requests per second over the whole run.
    pub throughput: f64,
    pub errors: usize,
}

/// A tools/call client for one server.
#[derive(Clone)]
pub(crate) struct McpClient {
    http: Client<HttpConnector, Full<Bytes>>,
    url: String,
}

impl McpClient {
    pub(crate) fn new(url: String) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        Self {
            http: Client::builder(TokioExecutor::new())
                .pool_max_idle_per_host(64)
                .build(connector),
            url,
        }
    }

    /// Calls a tool; returns the server's elapsed_ms, or an error text.
    pub(crate) async fn call(&self, tool: &str, arguments: &Value) -> Result<f64, String> {
        let answer = self.call_structured(tool, arguments).await?;
        Ok(answer["performance"]["elapsed_ms"].as_f64().unwrap_or(0.0))
    }

    /// Calls a tool; returns its answer's `structuredContent`, or an error text.
    pub(crate) async fn call_structured(
        &self,
        tool: &str,
        arguments: &Value,
    ) -> Result<Value, String> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}).to_string();
        let request = axum::http::Request::post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let response = self
            .http
            .request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if !status.is_success() {
            return Err(format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        let mut message: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        let result = &mut message["result"];
        if result["isError"] != false {
            return Err(format!(
                "{tool} failed: {}",
                result["structuredContent"]["error"]
            ));
        }
        Ok(result["structuredContent"].take())
    }

    /// Calls the tool with `requests` in turn, one at a time, until `stop`; the client-side
    /// latencies of the calls that succeeded.
    pub(crate) async fn run_until(
        &self,
        tool: &str,
        requests: Arc<Vec<Value>>,
        stop: tokio_util::sync::CancellationToken,
    ) -> Percentiles {
        let mut samples = Vec::new();
        if requests.is_empty() {
            return Percentiles::of(samples);
        }
        for arguments in requests.iter().cycle() {
            if stop.is_cancelled() {
                break;
            }
            let sent = Instant::now();
            if self.call(tool, arguments).await.is_ok() {
                samples.push(millis(sent.elapsed()));
            }
        }
        Percentiles::of(samples)
    }

    /// Runs `requests` through `clients` concurrent callers, after `warmup` unmeasured calls.
    pub(crate) async fn run(
        &self,
        tool: &str,
        requests: Arc<Vec<Value>>,
        clients: usize,
        warmup: usize,
    ) -> Measured {
        for arguments in requests.iter().take(warmup) {
            let _ = self.call(tool, arguments).await;
        }
        let next = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..clients.max(1) {
            let (client, requests, next, tool) = (
                self.clone(),
                requests.clone(),
                next.clone(),
                tool.to_owned(),
            );
            tasks.push(tokio::spawn(async move {
                let mut samples = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(arguments) = requests.get(i) else {
                        return samples;
                    };
                    let sent = Instant::now();
                    let outcome = client.call(&tool, arguments).await;
                    samples.push((sent.elapsed(), outcome));
                }
            }));
        }
        let mut client_ms = Vec::new();
        let mut server_ms = Vec::new();
        let mut errors = 0;
        for task in tasks {
            for (elapsed, outcome) in task.await.expect("load task") {
                match outcome {
                    Ok(server) => {
                        client_ms.push(millis(elapsed));
                        server_ms.push(server);
                    }
                    Err(error) => {
                        errors += 1;
                        if errors <= 3 {
                            tracing::warn!(%error, tool, "benchmark request failed");
                        }
                    }
                }
            }
        }
        let wall = started.elapsed().as_secs_f64();
        Measured {
            throughput: client_ms.len() as f64 / wall.max(1e-9),
            client: Percentiles::of(client_ms),
            server: Percentiles::of(server_ms),
            errors,
        }
    }
}

/// `GET` of each page of `paths` under `base` in turn, after `warmup` unmeasured ones: the
/// client-side latencies of whole pages (status 200, body read to the end).
pub(crate) async fn fetch_pages(base: &str, paths: &[String], warmup: usize) -> Measured {
    let http: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let get = |path: &str| {
        let request = axum::http::Request::get(format!("{base}{path}"))
            .body(Full::new(Bytes::new()))
            .expect("a valid page URL");
        let http = http.clone();
        async move {
            let response = http.request(request).await.map_err(|e| e.to_string())?;
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?;
            if status.is_success() && !body.to_bytes().is_empty() {
                Ok(())
            } else {
                Err(format!("HTTP {status}"))
            }
        }
    };
    for path in paths.iter().take(warmup) {
        let _ = get(path).await;
    }
    let started = Instant::now();
    let mut samples = Vec::new();
    let mut errors = 0;
    for path in paths {
        let sent = Instant::now();
        match get(path).await {
            Ok(()) => samples.push(millis(sent.elapsed())),
            Err(error) => {
                errors += 1;
                if errors <= 3 {
                    tracing::warn!(%error, path, "benchmark page failed");
                }
            }
        }
    }
    Measured {
        throughput: samples.len() as f64 / started.elapsed().as_secs_f64().max(1e-9),
        client: Percentiles::of(samples),
        server: Percentiles::default(),
        errors,
    }
}

pub(crate) fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_nearest_rank_percentiles() {
        let p = Percentiles::of((1..=100).map(f64::from).collect());
        assert_eq!((p.p50, p.p95, p.p99, p.max), (50.0, 95.0, 99.0, 100.0));
        let p = Percentiles::of(vec![3.0, 1.0, 2.0]);
        assert_eq!((p.p50, p.p99), (2.0, 3.0));
        assert_eq!(Percentiles::of(Vec::new()).samples, 0);
    }
}
