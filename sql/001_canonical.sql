-- Canonical session history: sessions, turns and events, maintained at ingest time.
--
-- Ingest writes every event once, into the Null-engine table `event_ingest`; materialized views
-- fan that single insert out into `events` here and into the search index (002), so an event is
-- indexed in the same insert that stores it. Turn and session rows are rewritten with a higher
-- `version` whenever ingest appends to them; readers use FINAL, which is cheap because both tables
-- hold one row per turn or session, not per event.

CREATE TABLE IF NOT EXISTS sessions
(
    session_key  UInt64,
    harness      LowCardinality(String),
    source       LowCardinality(String),
    native_id    String,
    title        String,
    slug         String,
    summary      String,
    cwd          String,
    model        LowCardinality(String),
    started_at   DateTime64(3, 'UTC'),
    updated_at   DateTime64(3, 'UTC'),
    turn_count   UInt32,
    event_count  UInt32,
    completed    Bool,
    mode         LowCardinality(String),
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY session_key;

CREATE TABLE IF NOT EXISTS turns
(
    session_key         UInt64,
    ordinal             UInt32,
    completed           Bool,
    terminal_event_key  UInt64,
    event_count         UInt32,
    started_at          DateTime64(3, 'UTC'),
    updated_at          DateTime64(3, 'UTC'),
    user_event_key      UInt64,
    user_preview        String,
    user_truncated      Bool,
    final_event_key     UInt64,
    final_preview       String,
    final_truncated     Bool,
    tools_called        Array(String),
    event_types         Array(String),
    version             UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (session_key, ordinal);

-- One row per event, never updated (whether an event is terminal is the turn's
-- terminal_event_key). Ordered so that a turn's events, and a session's turns, are contiguous
-- ranges. Granules of at most 64 rows or 32 KiB and compression blocks of at most 32 KiB keep
-- point lookups (open(event), search snippets) from decompressing neighbouring payloads.
CREATE TABLE IF NOT EXISTS events
(
    session_key        UInt64,
    turn_ordinal       UInt32,
    ordinal            UInt32,
    event_key          UInt64,
    event_type         Enum8('user_input' = 1, 'assistant_response' = 2, 'reasoning' = 3,
                             'tool_call' = 4, 'tool_response' = 5, 'compaction' = 6,
                             'system' = 7, 'runtime' = 8, 'unknown' = 9),
    ts                 DateTime64(3, 'UTC'),
    model              LowCardinality(String),
    originating_model  LowCardinality(String),
    tool_name          LowCardinality(String),
    tool_call_id       String,
    exit_code          Nullable(Int32),
    is_error           Bool,
    text               String CODEC(ZSTD(1)),
    arguments          String CODEC(ZSTD(1)),
    summary            String CODEC(ZSTD(1)),
    summary_truncated  Bool,
    raw                String CODEC(ZSTD(1)),
    searchable         Bool,
    self_tool          Bool,
    doc_len            UInt16,
    line_no            UInt32
)
ENGINE = MergeTree
ORDER BY (session_key, turn_ordinal, ordinal)
SETTINGS index_granularity = 64, index_granularity_bytes = 32768,
         min_compress_block_size = 4096, max_compress_block_size = 32768;

-- The single write path. Nothing is stored here: the views below and in 002 consume each block.
CREATE TABLE IF NOT EXISTS event_ingest
(
    session_key        UInt64,
    turn_ordinal       UInt32,
    ordinal            UInt32,
    event_key          UInt64,
    event_type         Enum8('user_input' = 1, 'assistant_response' = 2, 'reasoning' = 3,
                             'tool_call' = 4, 'tool_response' = 5, 'compaction' = 6,
                             'system' = 7, 'runtime' = 8, 'unknown' = 9),
    ts                 DateTime64(3, 'UTC'),
    model              String,
    originating_model  String,
    tool_name          String,
    tool_call_id       String,
    exit_code          Nullable(Int32),
    is_error           Bool,
    text               String,
    arguments          String,
    summary            String,
    summary_truncated  Bool,
    raw                String,
    searchable         Bool,
    self_tool          Bool,
    doc_len            UInt16,
    line_no            UInt32,
    -- The ingest tokenizer (the same function that tokenizes queries) writes each event's distinct
    -- term hashes and their frequencies, so the index views only explode arrays.
    terms              Array(UInt64),
    tfs                Array(UInt16)
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS events_mv TO events AS
SELECT
    session_key, turn_ordinal, ordinal, event_key, event_type, ts, model,
    originating_model, tool_name, tool_call_id, exit_code, is_error, text, arguments, summary,
    summary_truncated, raw, searchable, self_tool, doc_len, line_no
FROM event_ingest;
