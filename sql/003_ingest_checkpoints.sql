-- Per-file ingest checkpoints, so a re-run reads only appended lines.
--
-- `state` is the parser's JSON snapshot at `offset` (open turn, pending tool calls, session
-- aggregates); `head_hash`/`tail_hash` fingerprint the bytes before `offset` so that a truncated
-- or replaced file is detected and re-read from the start.

CREATE TABLE IF NOT EXISTS ingest_checkpoints
(
    file_key     UInt64,
    path         String,
    harness      LowCardinality(String),
    source       LowCardinality(String),
    session_key  UInt64,
    offset       UInt64,
    line_no      UInt32,
    head_hash    UInt64,
    tail_hash    UInt64,
    state        String CODEC(ZSTD(1)),
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY file_key;
