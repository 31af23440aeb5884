-- Best-effort search telemetry: one row per search and one per returned hit. Written
-- asynchronously in batches; never read on the request path. Kept for 90 days.

CREATE TABLE IF NOT EXISTS search_query_log
(
    ts             DateTime64(3, 'UTC'),
    query_id       String,
    query          String,
    within_id      String,
    event_types    Array(LowCardinality(String)),
    harness        String,
    source         String,
    n_hits         UInt8,
    result_count   UInt8,
    truncated      Bool,
    terms          UInt16,
    corpus_docs    UInt64,
    elapsed_ms     UInt32,
    met_sla        Bool,
    client         LowCardinality(String)
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (ts, query_id)
TTL toDateTime(ts) + INTERVAL 90 DAY;

CREATE TABLE IF NOT EXISTS search_hit_log
(
    ts         DateTime64(3, 'UTC'),
    query_id   String,
    rank       UInt8,
    score      Float32,
    event_id   String,
    session_id String
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (ts, query_id, rank)
TTL toDateTime(ts) + INTERVAL 90 DAY;
