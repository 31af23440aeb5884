//! Prometheus metrics on an explicit registry, rendered by `/metrics`.
//!
//! Latency histograms share one bucket layout whose edges include every SLA target of the spec
//! (and of the config), so "fraction of calls within target" is exact from the bucket counts.

use std::sync::Arc;

use prometheus::{
    GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

use strum::VariantArray as _;

use crate::config::SlaConfig;

/// Every latency figure in the spec's SLA tables (P50, P95 and P99 columns and deadlines),
/// in seconds.
const SPEC_TARGETS_SECONDS: [f64; 16] = [
    0.025, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.75, 0.8, 1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 5.0,
];

/// Finer edges below the targets, where this service usually answers.
const FINE_EDGES_SECONDS: [f64; 7] = [0.001, 0.0025, 0.005, 0.008, 0.01, 0.015, 0.02];

/// Tail edges past the longest deadline, so timeouts do not all land in +Inf.
const TAIL_EDGES_SECONDS: [f64; 2] = [10.0, 30.0];

/// The bucket layout: fine edges, every spec target, every configured target, the tail.
pub fn latency_buckets(sla: &SlaConfig) -> Vec<f64> {
    let mut edges: Vec<f64> = FINE_EDGES_SECONDS
        .iter()
        .chain(SPEC_TARGETS_SECONDS.iter())
        .chain(TAIL_EDGES_SECONDS.iter())
        .copied()
        .chain(
            sla.all_targets_ms()
                .into_iter()
                .map(|ms| ms as f64 / 1000.0),
        )
        .collect();
    edges.sort_by(f64::total_cmp);
    edges.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
    edges
}

/// `metric`, registered in `registry` (names are fixed, so a clash is a programming error).
fn registered<M: prometheus::core::Collector + Clone + 'static>(
    registry: &Registry,
    metric: M,
) -> M {
    registry
        .register(Box::new(metric.clone()))
        .expect("unique metric");
    metric
}

/// The service's metrics. Cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    tool_duration: HistogramVec,
    tool_calls: IntCounterVec,
    tool_sla: IntCounterVec,
    query_duration: HistogramVec,
    queries_in_flight: IntGauge,
    query_errors: IntCounterVec,
    slots: IntGauge,
    slots_busy: IntGauge,
    slots_waiting: IntGauge,
    http_requests: IntCounterVec,
    http_duration: HistogramVec,
    auth: IntCounterVec,
    query_log_dropped: IntCounterVec,
    search_reads: IntCounterVec,
    search_postings: IntCounterVec,
    ingest_requests: IntCounterVec,
    ingest_bytes: IntCounterVec,
    ingest_events: IntCounterVec,
    ingest_last_push: GaugeVec,
    future_events: IntCounterVec,
    local_files: IntCounterVec,
    local_lines: IntCounterVec,
    local_events: prometheus::IntCounter,
    local_pending: IntGauge,
    local_last_run: prometheus::Gauge,
    paced_writes: prometheus::IntCounter,
    paced_seconds: prometheus::Counter,
    store_documents: IntGauge,
    store_table_rows: IntGaugeVec,
    store_table_bytes: IntGaugeVec,
    store_table_parts: IntGaugeVec,
    store_disk_free: IntGaugeVec,
    store_disk_total: IntGaugeVec,
    store_refreshed: prometheus::Gauge,
}

impl Metrics {
    pub fn new(sla: &SlaConfig) -> Self {
        let registry =
            Registry::new_custom(Some("moraine_mcp".into()), None).expect("valid prefix");
        let buckets = latency_buckets(sla);
        let histogram = |name: &str, help: &str, labels: &[&str]| {
            let h = HistogramVec::new(
                HistogramOpts::new(name, help).buckets(buckets.clone()),
                labels,
            )
            .expect("valid histogram");
            registered(&registry, h)
        };
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid counter");
            registered(&registry, c)
        };
        let tool_duration = histogram(
            "tool_call_duration_seconds",
            "MCP tool call latency, from receipt to serialised response",
            &["tool", "outcome"],
        );
        let tool_calls = counter(
            "tool_calls_total",
            "MCP tool calls by tool and outcome (ok or the error code)",
            &["tool", "outcome"],
        );
        let tool_sla = counter(
            "tool_sla_total",
            "MCP tool calls by whether they met the SLA target reported in performance.met_sla",
            &["tool", "met"],
        );
        let search_reads = counter(
            "search_reads_total",
            "Searches by which postings they read: all_postings (scoped, or tiers off), \
             one_tier_read, two_tier_reads, tiers_then_all_postings",
            &["path"],
        );
        let search_postings = counter(
            "search_postings_total",
            "Postings of global searches by read path: `read` is what they read, `of_terms` \
             every posting of their terms (what reading them all would have read)",
            &["path", "postings"],
        );
        let query_duration = histogram(
            "clickhouse_query_duration_seconds",
            "ClickHouse query latency by query name",
            &["query"],
        );
        let gauge = |name: &str, help: &str| {
            let g = IntGauge::new(name, help).expect("valid gauge");
            registered(&registry, g)
        };
        let queries_in_flight = gauge(
            "clickhouse_queries_in_flight",
            "ClickHouse queries running now",
        );
        let query_errors = counter(
            "clickhouse_query_errors_total",
            "Failed ClickHouse queries by query and kind",
            &["query", "kind"],
        );
        let slots = gauge(
            "clickhouse_query_slots",
            "ClickHouse query slots (clickhouse.max_concurrent_queries)",
        );
        let slots_busy = gauge(
            "clickhouse_query_slots_busy",
            "ClickHouse query slots held by a running call",
        );
        let slots_waiting = gauge(
            "clickhouse_query_slot_waiters",
            "Calls waiting for a query slot (past clickhouse.queue_timeout_ms they answer busy)",
        );
        let http_requests = counter(
            "http_requests_total",
            "HTTP requests by route, method and status",
            &["route", "method", "status"],
        );
        let http_duration = histogram(
            "http_request_duration_seconds",
            "HTTP request latency to response head",
            &["route", "method"],
        );
        let auth = counter(
            "auth_requests_total",
            "Authentication of protected routes by method (none, static, oauth) and outcome",
            &["method", "outcome"],
        );
        let query_log_dropped = counter(
            "query_log_failures_total",
            "Search log rows not written (queue full or insert failed)",
            &["reason"],
        );
        let ingest_requests = counter(
            "ingest_requests_total",
            "Ingest API appends by outcome (ok, duplicate, offset_mismatch, content_mismatch, busy, too_large, invalid, failed)",
            &["outcome"],
        );
        let ingest_bytes = counter(
            "ingest_received_bytes_total",
            "Log bytes received by the ingest API, by source",
            &["source"],
        );
        let ingest_events = counter(
            "ingest_events_total",
            "Events written from logs received by the ingest API, by source",
            &["source"],
        );
        let ingest_last_push = registered(
            &registry,
            GaugeVec::new(
                Opts::new(
                    "ingest_last_push_timestamp_seconds",
                    "When the ingest API last accepted bytes from a source (Unix time)",
                ),
                &["source"],
            )
            .expect("valid gauge"),
        );
        let future_events = counter(
            "ingest_future_events_total",
            "Events dated more than 10 minutes after the reading machine's clock, shown at the time they were read, by source",
            &["source"],
        );
        let local_files = counter(
            "ingest_local_files_total",
            "Log files looked at by local ingest (up's periodic ingest), by outcome",
            &["outcome"],
        );
        let local_lines = counter(
            "ingest_local_lines_total",
            "Log lines read by local ingest, by outcome (parsed or malformed)",
            &["outcome"],
        );
        let local_events = registered(
            &registry,
            prometheus::IntCounter::new(
                "ingest_local_events_total",
                "Events written by local ingest",
            )
            .expect("valid counter"),
        );
        let local_pending = gauge(
            "ingest_local_pending_bytes",
            "Log bytes not yet ingested when local ingest last started (its lag)",
        );
        let local_last_run = registered(
            &registry,
            prometheus::Gauge::new(
                "ingest_local_last_run_timestamp_seconds",
                "When local ingest last finished a run (Unix time)",
            )
            .expect("valid gauge"),
        );
        let paced_writes = registered(
            &registry,
            prometheus::IntCounter::new(
                "ingest_paced_writes_total",
                "Ingest writes that gave way to running tool calls before they started",
            )
            .expect("valid counter"),
        );
        let paced_seconds = registered(
            &registry,
            prometheus::Counter::new(
                "ingest_paced_seconds_total",
                "Seconds ingest writes waited for running tool calls",
            )
            .expect("valid counter"),
        );
        let store_documents = gauge(
            "store_documents",
            "Searchable documents (events) in the store, as search statistics count them",
        );
        let per_server = |opts: Opts, of: &str| {
            registered(
                &registry,
                IntGaugeVec::new(opts, &["host", of]).expect("valid gauge"),
            )
        };
        let store_table_rows = per_server(
            Opts::new(
                "store_table_rows",
                "Rows in each table's active parts, by ClickHouse server",
            ),
            "table",
        );
        let store_table_bytes = per_server(
            Opts::new(
                "store_table_bytes",
                "Bytes on disk of each table's active parts, by ClickHouse server",
            ),
            "table",
        );
        let store_table_parts = per_server(
            Opts::new(
                "store_table_parts",
                "Active parts of each table, by ClickHouse server",
            ),
            "table",
        );
        let store_disk_free = per_server(
            Opts::new(
                "store_disk_free_bytes",
                "Free space on each ClickHouse server's disks",
            ),
            "disk",
        );
        let store_disk_total = per_server(
            Opts::new(
                "store_disk_total_bytes",
                "Size of each ClickHouse server's disks",
            ),
            "disk",
        );
        let store_refreshed = registered(
            &registry,
            prometheus::Gauge::new(
                "store_last_refresh_timestamp_seconds",
                "When the store_* figures were last read (Unix time)",
            )
            .expect("valid gauge"),
        );
        // CPU, memory and open files of this process (Linux; elsewhere nothing is exported).
        #[cfg(target_os = "linux")]
        registry
            .register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ))
            .expect("unique metric");
        let build_info = registered(
            &registry,
            IntGaugeVec::new(Opts::new("build_info", "Build information"), &["version"])
                .expect("valid gauge"),
        );
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        let metrics = Self {
            inner: Arc::new(Inner {
                registry,
                tool_duration,
                tool_calls,
                tool_sla,
                query_duration,
                queries_in_flight,
                query_errors,
                slots,
                slots_busy,
                slots_waiting,
                http_requests,
                http_duration,
                auth,
                query_log_dropped,
                search_reads,
                search_postings,
                ingest_requests,
                ingest_bytes,
                ingest_events,
                ingest_last_push,
                future_events,
                local_files,
                local_lines,
                local_events,
                local_pending,
                local_last_run,
                paced_writes,
                paced_seconds,
                store_documents,
                store_table_rows,
                store_table_bytes,
                store_table_parts,
                store_disk_free,
                store_disk_total,
                store_refreshed,
            }),
        };
        metrics.zero_fixed_labels();
        metrics
    }

    /// Exports at 0 every series whose labels are known up front, so that a rate or an alert
    /// over them has data from the first scrape rather than "no data" until the first event.
    fn zero_fixed_labels(&self) {
        let inner = &self.inner;
        for reason in ["queue_full", "insert_failed"] {
            inner.query_log_dropped.with_label_values(&[reason]);
        }
        for outcome in IngestOutcome::VARIANTS {
            inner.ingest_requests.with_label_values(&[outcome.label()]);
        }
        for outcome in ["read", "unchanged", "reread", "unreadable"] {
            inner.local_files.with_label_values(&[outcome]);
        }
        for outcome in ["parsed", "malformed"] {
            inner.local_lines.with_label_values(&[outcome]);
        }
    }

    /// Exports at 0 the calls, failures and SLA results of each of `tools`.
    pub fn zero_tools(&self, tools: &[&str], outcomes: &[&str]) {
        for tool in tools {
            for outcome in outcomes {
                self.inner.tool_calls.with_label_values(&[tool, outcome]);
            }
            for met in ["true", "false"] {
                self.inner.tool_sla.with_label_values(&[tool, met]);
            }
        }
    }

    /// Exports at 0 the authentication `outcomes` of `method`.
    pub(crate) fn zero_auth(&self, method: &str, outcomes: &[&str]) {
        for outcome in outcomes {
            self.inner.auth.with_label_values(&[method, outcome]);
        }
    }

    /// What one local ingest run did.
    pub fn observe_local_ingest(&self, c: &LocalIngestRun) {
        let inner = &self.inner;
        for (outcome, n) in [
            ("read", c.files_read),
            ("unchanged", c.files_unchanged),
            ("reread", c.files_reread),
            ("unreadable", c.files_unreadable),
        ] {
            inner.local_files.with_label_values(&[outcome]).inc_by(n);
        }
        inner
            .local_lines
            .with_label_values(&["parsed"])
            .inc_by(c.lines.saturating_sub(c.malformed));
        inner
            .local_lines
            .with_label_values(&["malformed"])
            .inc_by(c.malformed);
        inner.local_events.inc_by(c.events);
        self.future_events("local", c.future_events);
        inner
            .local_pending
            .set(i64::try_from(c.pending_bytes).unwrap_or(i64::MAX));
        inner
            .local_last_run
            .set(crate::text::now_ms() as f64 / 1000.0);
    }

    pub fn observe_tool(&self, tool: &str, outcome: &str, seconds: f64, met_sla: bool) {
        self.inner
            .tool_duration
            .with_label_values(&[tool, outcome])
            .observe(seconds);
        self.inner
            .tool_calls
            .with_label_values(&[tool, outcome])
            .inc();
        // A failed call never met its SLA, however fast it failed.
        let met = met_sla && outcome == "ok";
        self.inner
            .tool_sla
            .with_label_values(&[tool, if met { "true" } else { "false" }])
            .inc();
    }

    pub fn observe_query(&self, query: &str, seconds: f64, error_kind: Option<&str>) {
        self.inner
            .query_duration
            .with_label_values(&[query])
            .observe(seconds);
        if let Some(kind) = error_kind {
            self.inner
                .query_errors
                .with_label_values(&[query, kind])
                .inc();
        }
    }

    /// Every ClickHouse query name observed so far, with its count and mean seconds.
    pub fn query_means(&self) -> Vec<(String, u64, f64)> {
        use prometheus::core::Collector as _;
        let mut out = Vec::new();
        for family in self.inner.query_duration.collect() {
            for metric in family.get_metric() {
                let name = metric
                    .get_label()
                    .iter()
                    .find(|l| l.name() == "query")
                    .map(|l| l.value().to_owned())
                    .unwrap_or_default();
                let histogram = metric.get_histogram();
                let count = histogram.get_sample_count();
                if count > 0 {
                    out.push((name, count, histogram.get_sample_sum() / count as f64));
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Counts a query in flight until the guard drops.
    pub fn query_in_flight(&self) -> InFlight {
        self.inner.queries_in_flight.inc();
        InFlight(self.inner.queries_in_flight.clone())
    }

    pub fn set_pool(&self, status: deadpool::Status) {
        let inner = &self.inner;
        inner.slots.set(status.max_size as i64);
        inner
            .slots_busy
            .set(status.size.saturating_sub(status.available) as i64);
        inner.slots_waiting.set(status.waiting as i64);
    }

    pub fn observe_http(&self, route: &str, method: &str, status: &str, seconds: f64) {
        self.inner
            .http_requests
            .with_label_values(&[route, method, status])
            .inc();
        self.inner
            .http_duration
            .with_label_values(&[route, method])
            .observe(seconds);
    }

    /// One authentication: by method and outcome only, never by who (bounded labels).
    pub(crate) fn observe_auth(&self, method: &str, outcome: &str) {
        self.inner.auth.with_label_values(&[method, outcome]).inc();
    }

    pub fn query_log_failure(&self, reason: &str, rows: u64) {
        self.inner
            .query_log_dropped
            .with_label_values(&[reason])
            .inc_by(rows);
    }

    /// A search that read the postings by `path`.
    pub fn observe_search_read(&self, path: &str) {
        self.inner.search_reads.with_label_values(&[path]).inc();
    }

    /// A global search that read `read` of its terms' `all` postings.
    pub fn observe_search_postings(&self, path: &str, read: u64, all: u64) {
        let postings = &self.inner.search_postings;
        postings.with_label_values(&[path, "read"]).inc_by(read);
        postings.with_label_values(&[path, "of_terms"]).inc_by(all);
    }

    /// Per path: the postings global searches read, and their terms' postings (each exported
    /// from now on, at 0 until one is counted).
    pub fn search_postings(&self, paths: &[&str]) -> Vec<(String, u64, u64)> {
        let postings = &self.inner.search_postings;
        paths
            .iter()
            .map(|path| {
                let read = postings.with_label_values(&[path, "read"]).get();
                let all = postings.with_label_values(&[path, "of_terms"]).get();
                ((*path).to_owned(), read, all)
            })
            .collect()
    }

    /// Searches so far that read the postings by each of `paths` (each exported from now on,
    /// at 0 until one is counted).
    pub fn search_reads(&self, paths: &[&str]) -> Vec<(String, u64)> {
        paths
            .iter()
            .map(|path| {
                let count = self.inner.search_reads.with_label_values(&[path]).get();
                ((*path).to_owned(), count)
            })
            .collect()
    }

    /// An ingest write that waited `seconds` for running tool calls.
    pub fn observe_paced_write(&self, seconds: f64) {
        self.inner.paced_writes.inc();
        self.inner.paced_seconds.inc_by(seconds);
    }

    /// An ingest API append and its outcome.
    pub fn observe_ingest(&self, outcome: IngestOutcome) {
        self.inner
            .ingest_requests
            .with_label_values(&[outcome.label()])
            .inc();
    }

    /// Bytes and events accepted from `source`, at `at_seconds` (Unix time).
    pub fn ingested(&self, source: &str, bytes: u64, events: u64, at_seconds: f64) {
        let inner = &self.inner;
        inner
            .ingest_bytes
            .with_label_values(&[source])
            .inc_by(bytes);
        inner
            .ingest_events
            .with_label_values(&[source])
            .inc_by(events);
        inner
            .ingest_last_push
            .with_label_values(&[source])
            .set(at_seconds);
    }

    /// Events from `source` dated past the reading machine's clock (a wrong clock there).
    pub fn future_events(&self, source: &str, events: u64) {
        if events > 0 {
            self.inner
                .future_events
                .with_label_values(&[source])
                .inc_by(events);
        }
    }

    /// The last push of `source` as stored (at start-up), unless a newer one was seen.
    pub fn restore_last_push(&self, source: &str, at_seconds: f64) {
        let gauge = self.inner.ingest_last_push.with_label_values(&[source]);
        if gauge.get() < at_seconds {
            gauge.set(at_seconds);
        }
    }

    /// What the store holds and each server's disk space, as just read: replaces the last
    /// figures whole, so a table or server that is gone leaves no stale series.
    pub(crate) fn observe_store(&self, store: &Store) {
        let inner = &self.inner;
        inner
            .store_documents
            .set(i64::try_from(store.documents).unwrap_or(i64::MAX));
        let tables = [
            &inner.store_table_rows,
            &inner.store_table_bytes,
            &inner.store_table_parts,
        ];
        let disks = [&inner.store_disk_free, &inner.store_disk_total];
        for vec in tables.iter().chain(&disks) {
            vec.reset();
        }
        let set = |vec: &IntGaugeVec, labels: [&str; 2], value: u64| {
            vec.with_label_values(&labels)
                .set(i64::try_from(value).unwrap_or(i64::MAX));
        };
        for t in &store.tables {
            let labels = [t.host.as_str(), t.table.as_str()];
            for (vec, value) in tables.iter().zip([t.rows, t.bytes, t.parts]) {
                set(vec, labels, value);
            }
        }
        for d in &store.disks {
            let labels = [d.host.as_str(), d.disk.as_str()];
            for (vec, value) in disks.iter().zip([d.free, d.total]) {
                set(vec, labels, value);
            }
        }
        inner.store_refreshed.set(store.read_at);
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        TextEncoder::new()
            .encode_to_string(&self.inner.registry.gather())
            .unwrap_or_default()
    }
}

/// One table on one server.
#[derive(Debug, Clone, PartialEq, Eq, clickhouse::Row, serde::Deserialize)]
pub(crate) struct TableSize {
    pub host: String,
    pub table: String,
    pub rows: u64,
    pub bytes: u64,
    pub parts: u64,
}

/// One disk of one server.
#[derive(Debug, Clone, PartialEq, Eq, clickhouse::Row, serde::Deserialize)]
pub(crate) struct DiskSpace {
    pub host: String,
    pub disk: String,
    pub free: u64,
    pub total: u64,
}

/// The store's size, as read at `read_at` (Unix seconds) by `capacity`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Store {
    pub documents: u64,
    pub tables: Vec<TableSize>,
    pub disks: Vec<DiskSpace>,
    pub read_at: f64,
}

/// The outcome of an ingest API request, as `moraine_mcp_ingest_requests_total` labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum IngestOutcome {
    /// Bytes written.
    Ok,
    /// The range was already stored: nothing written.
    Duplicate,
    OffsetMismatch,
    ContentMismatch,
    /// Refused for lack of an ingest slot (429).
    Busy,
    TooLarge,
    Invalid,
    /// The store failed or an internal error.
    Failed,
    /// Refused while the schema is migrated (not a failure to alert on).
    Migrating,
}

impl IngestOutcome {
    pub fn label(self) -> &'static str {
        self.into()
    }
}

/// What one local ingest run did, as the metrics count it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalIngestRun {
    pub files_read: u64,
    pub files_unchanged: u64,
    pub files_reread: u64,
    pub files_unreadable: u64,
    pub lines: u64,
    pub malformed: u64,
    pub events: u64,
    pub future_events: u64,
    /// Log bytes not yet ingested when the run started.
    pub pending_bytes: u64,
}

/// Decrements the in-flight gauge when dropped.
pub struct InFlight(IntGauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_every_sla_target_is_a_bucket_edge() {
        let sla = SlaConfig::default();
        let buckets = latency_buckets(&sla);
        for ms in sla.all_targets_ms() {
            let edge = ms as f64 / 1000.0;
            assert!(buckets.iter().any(|b| (b - edge).abs() < 1e-9), "{ms} ms");
        }
        for edge in SPEC_TARGETS_SECONDS {
            assert!(buckets.contains(&edge));
        }
        assert!(buckets.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn test_a_store_reading_replaces_the_last_whole() {
        let metrics = Metrics::new(&SlaConfig::default());
        let table = |host: &str, table: &str, rows: u64| TableSize {
            host: host.into(),
            table: table.into(),
            rows,
            bytes: rows * 10,
            parts: 2,
        };
        let disk = DiskSpace {
            host: "a".into(),
            disk: "default".into(),
            free: 5,
            total: u64::MAX,
        };
        metrics.observe_store(&Store {
            documents: 7,
            tables: vec![table("a", "events", 7), table("a", "turns_coarse", 3)],
            disks: vec![disk.clone()],
            read_at: 100.0,
        });
        let text = metrics.render();
        assert!(text.contains("moraine_mcp_store_documents 7"));
        assert!(text.contains("moraine_mcp_store_table_rows{host=\"a\",table=\"turns_coarse\"} 3"));
        // A size past i64 is shown as the largest gauge value, not wrapped.
        let total: f64 = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("moraine_mcp_store_disk_total_bytes{disk=\"default\",host=\"a\"} ")
            })
            .expect("a disk series")
            .parse()
            .unwrap();
        assert_eq!(total, i64::MAX as f64);
        metrics.observe_store(&Store {
            documents: 9,
            tables: vec![table("a", "events", 9), table("b", "events", 9)],
            disks: vec![disk],
            read_at: 160.0,
        });
        let text = metrics.render();
        assert!(
            !text.contains("turns_coarse"),
            "a table gone keeps no series"
        );
        assert!(text.contains("moraine_mcp_store_table_bytes{host=\"b\",table=\"events\"} 90"));
        assert!(text.contains("moraine_mcp_store_table_parts{host=\"a\",table=\"events\"} 2"));
        assert!(text.contains("moraine_mcp_store_last_refresh_timestamp_seconds 160"));
    }

    #[test]
    fn test_render_contains_histograms() {
        let metrics = Metrics::new(&SlaConfig::default());
        metrics.observe_tool("search_sessions", "ok", 0.012, true);
        let text = metrics.render();
        assert!(text.contains("moraine_mcp_tool_call_duration_seconds_bucket{outcome=\"ok\",tool=\"search_sessions\",le=\"0.75\"} 1"));
        assert!(text.contains("moraine_mcp_build_info"));
    }
}
