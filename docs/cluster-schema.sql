-- moraine-mcp schema version 13, on cluster moraine: Distributed tables in database moraine, the shards' replicated tables in moraine_local.
-- Each statement is preceded by the database it runs in, and by the condition it runs under, if any.

CREATE DATABASE IF NOT EXISTS moraine ON CLUSTER moraine;
CREATE DATABASE IF NOT EXISTS moraine_local ON CLUSTER moraine;

-- schema_migrations
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.schema_migrations ON CLUSTER moraine (version UInt32, name String, checksum String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{uuid}/all', '{shard}-{replica}') ORDER BY version;

-- write_gate
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.write_gate ON CLUSTER moraine (role Enum8('writer' = 1, 'migrator' = 2), holder UInt64, seq UInt64, until DateTime64(6, 'UTC'), label String, written DateTime64(6, 'UTC') DEFAULT now64(6)) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{uuid}/all', '{shard}-{replica}') ORDER BY (role, holder, seq) TTL toDateTime(written) + INTERVAL 1 DAY;

-- 001_canonical
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.sessions ON CLUSTER moraine
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}', version)
ORDER BY session_key;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.sessions ON CLUSTER moraine AS moraine_local.sessions
ENGINE = Distributed('moraine', 'moraine_local', 'sessions', session_key);
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.turns ON CLUSTER moraine
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}', version)
ORDER BY (session_key, ordinal);
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.turns ON CLUSTER moraine AS moraine_local.turns
ENGINE = Distributed('moraine', 'moraine_local', 'turns', session_key);
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.events ON CLUSTER moraine
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
ENGINE = ReplicatedMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}')
ORDER BY (session_key, turn_ordinal, ordinal)
SETTINGS index_granularity = 64, index_granularity_bytes = 32768,
         min_compress_block_size = 4096, max_compress_block_size = 32768;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.events ON CLUSTER moraine AS moraine_local.events
ENGINE = Distributed('moraine', 'moraine_local', 'events', session_key);
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.event_ingest ON CLUSTER moraine
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
    terms              Array(UInt64),
    tfs                Array(UInt16)
)
ENGINE = Null;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.event_ingest ON CLUSTER moraine AS moraine_local.event_ingest
ENGINE = Distributed('moraine', 'moraine_local', 'event_ingest', session_key);
-- in moraine_local
CREATE MATERIALIZED VIEW IF NOT EXISTS moraine_local.events_mv ON CLUSTER moraine TO moraine_local.events AS
SELECT
    session_key, turn_ordinal, ordinal, event_key, event_type, ts, model,
    originating_model, tool_name, tool_call_id, exit_code, is_error, text, arguments, summary,
    summary_truncated, raw, searchable, self_tool, doc_len, line_no
FROM event_ingest;

-- 002_search_index
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.postings ON CLUSTER moraine
(
    term     UInt64,
    sess     UInt64,
    doc      UInt64,
    tf       UInt16,
    doc_len  UInt16,
    kind     UInt8,
    turn     UInt32 CODEC(Delta, LZ4)
)
ENGINE = ReplicatedMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}')
ORDER BY (term, sess, doc)
SETTINGS index_granularity = 1024;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.postings ON CLUSTER moraine AS moraine_local.postings
ENGINE = Distributed('moraine', 'moraine_local', 'postings', sess);
-- in moraine_local
CREATE MATERIALIZED VIEW IF NOT EXISTS moraine_local.postings_mv ON CLUSTER moraine TO moraine_local.postings AS
SELECT
    term,
    session_key AS sess,
    event_key AS doc,
    tf,
    doc_len,
    toUInt8(toUInt8(event_type) + 128 * self_tool) AS kind,
    turn_ordinal AS turn
FROM event_ingest
ARRAY JOIN terms AS term, tfs AS tf
WHERE searchable;
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.term_df ON CLUSTER moraine
(
    term  UInt64,
    df    Int64
)
ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}')
ORDER BY term;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.term_df ON CLUSTER moraine AS moraine_local.term_df
ENGINE = Distributed('moraine', 'moraine_local', 'term_df', term);
-- in moraine_local
CREATE MATERIALIZED VIEW IF NOT EXISTS moraine_local.term_df_mv ON CLUSTER moraine TO moraine_local.term_df AS
SELECT term, toInt64(count()) AS df
FROM event_ingest
ARRAY JOIN terms AS term
WHERE searchable
GROUP BY term;
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.corpus_stats ON CLUSTER moraine
(
    k          UInt8,
    docs       Int64,
    total_len  Int64
)
ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}')
ORDER BY k;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.corpus_stats ON CLUSTER moraine AS moraine_local.corpus_stats
ENGINE = Distributed('moraine', 'moraine_local', 'corpus_stats', 0);
-- in moraine_local
CREATE MATERIALIZED VIEW IF NOT EXISTS moraine_local.corpus_stats_mv ON CLUSTER moraine TO moraine_local.corpus_stats AS
SELECT
    toUInt8(0) AS k,
    toInt64(countIf(searchable)) AS docs,
    toInt64(sumIf(doc_len, searchable)) AS total_len
FROM event_ingest;

-- 003_ingest_checkpoints
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.ingest_checkpoints ON CLUSTER moraine
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}', version)
ORDER BY file_key;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.ingest_checkpoints ON CLUSTER moraine AS moraine_local.ingest_checkpoints
ENGINE = Distributed('moraine', 'moraine_local', 'ingest_checkpoints', file_key);

-- 004_query_log
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.search_query_log ON CLUSTER moraine
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
ENGINE = ReplicatedMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}')
PARTITION BY toYYYYMM(ts)
ORDER BY (ts, query_id)
TTL toDateTime(ts) + INTERVAL 90 DAY;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.search_query_log ON CLUSTER moraine AS moraine_local.search_query_log
ENGINE = Distributed('moraine', 'moraine_local', 'search_query_log', cityHash64(query_id));
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.search_hit_log ON CLUSTER moraine
(
    ts         DateTime64(3, 'UTC'),
    query_id   String,
    rank       UInt8,
    score      Float32,
    event_id   String,
    session_id String
)
ENGINE = ReplicatedMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}')
PARTITION BY toYYYYMM(ts)
ORDER BY (ts, query_id, rank)
TTL toDateTime(ts) + INTERVAL 90 DAY;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.search_hit_log ON CLUSTER moraine AS moraine_local.search_hit_log
ENGINE = Distributed('moraine', 'moraine_local', 'search_hit_log', cityHash64(query_id));

-- 005_service_keys
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.service_keys ON CLUSTER moraine
(
    name        String,
    key         String,
    created_at  DateTime64(3, 'UTC')
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{uuid}/all', '{shard}-{replica}', created_at)
ORDER BY name;
-- in moraine
INSERT INTO service_keys SELECT 'cursor', hex(randomString(32)), now64(3) WHERE (SELECT count() FROM service_keys WHERE name = 'cursor') = 0;

-- 006_archive
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.raw_chunks ON CLUSTER moraine
(
    file_key     UInt64,
    generation   UInt32,
    offset       UInt64,
    data         String CODEC(ZSTD(3)),
    received_at  DateTime64(3, 'UTC')
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}', received_at)
ORDER BY (file_key, generation, offset);
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.raw_chunks ON CLUSTER moraine AS moraine_local.raw_chunks
ENGINE = Distributed('moraine', 'moraine_local', 'raw_chunks', file_key);
-- in moraine_local
ALTER TABLE moraine_local.ingest_checkpoints ON CLUSTER moraine ADD COLUMN IF NOT EXISTS received UInt64 DEFAULT offset;
-- in moraine
DROP TABLE IF EXISTS moraine.ingest_checkpoints ON CLUSTER moraine SYNC;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.ingest_checkpoints ON CLUSTER moraine AS moraine_local.ingest_checkpoints
ENGINE = Distributed('moraine', 'moraine_local', 'ingest_checkpoints', file_key);
-- in moraine_local
ALTER TABLE moraine_local.ingest_checkpoints ON CLUSTER moraine ADD COLUMN IF NOT EXISTS generation UInt32 DEFAULT 0;
-- in moraine
DROP TABLE IF EXISTS moraine.ingest_checkpoints ON CLUSTER moraine SYNC;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.ingest_checkpoints ON CLUSTER moraine AS moraine_local.ingest_checkpoints
ENGINE = Distributed('moraine', 'moraine_local', 'ingest_checkpoints', file_key);
-- in moraine_local
ALTER TABLE moraine_local.ingest_checkpoints ON CLUSTER moraine ADD COLUMN IF NOT EXISTS origin LowCardinality(String) DEFAULT 'local';
-- in moraine
DROP TABLE IF EXISTS moraine.ingest_checkpoints ON CLUSTER moraine SYNC;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.ingest_checkpoints ON CLUSTER moraine AS moraine_local.ingest_checkpoints
ENGINE = Distributed('moraine', 'moraine_local', 'ingest_checkpoints', file_key);
-- in moraine_local
ALTER TABLE moraine_local.ingest_checkpoints ON CLUSTER moraine ADD COLUMN IF NOT EXISTS updated_at DateTime64(3, 'UTC') DEFAULT now64(3);
-- in moraine
DROP TABLE IF EXISTS moraine.ingest_checkpoints ON CLUSTER moraine SYNC;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.ingest_checkpoints ON CLUSTER moraine AS moraine_local.ingest_checkpoints
ENGINE = Distributed('moraine', 'moraine_local', 'ingest_checkpoints', file_key);
-- in moraine_local
DELETE FROM moraine_local.ingest_checkpoints ON CLUSTER moraine WHERE file_key = session_key;

-- 007_archive_codec
-- in moraine_local
ALTER TABLE moraine_local.raw_chunks ON CLUSTER moraine MODIFY COLUMN data String CODEC(ZSTD(1));
-- in moraine
DROP TABLE IF EXISTS moraine.raw_chunks ON CLUSTER moraine SYNC;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.raw_chunks ON CLUSTER moraine AS moraine_local.raw_chunks
ENGINE = Distributed('moraine', 'moraine_local', 'raw_chunks', file_key);

-- 008_write_once
-- in moraine_local
ALTER TABLE moraine_local.event_ingest ON CLUSTER moraine ADD COLUMN IF NOT EXISTS batch UInt64;
-- in moraine
DROP TABLE IF EXISTS moraine.event_ingest ON CLUSTER moraine SYNC;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.event_ingest ON CLUSTER moraine AS moraine_local.event_ingest
ENGINE = Distributed('moraine', 'moraine_local', 'event_ingest', session_key);
-- in moraine_local
ALTER TABLE moraine_local.events ON CLUSTER moraine ADD COLUMN IF NOT EXISTS batch UInt64 DEFAULT 0 CODEC(Delta, ZSTD(1));
-- in moraine
DROP TABLE IF EXISTS moraine.events ON CLUSTER moraine SYNC;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.events ON CLUSTER moraine AS moraine_local.events
ENGINE = Distributed('moraine', 'moraine_local', 'events', session_key);
-- in moraine_local
DROP VIEW IF EXISTS moraine_local.events_mv ON CLUSTER moraine;
-- in moraine_local
CREATE MATERIALIZED VIEW IF NOT EXISTS moraine_local.events_mv ON CLUSTER moraine TO moraine_local.events AS
SELECT
    session_key, turn_ordinal, ordinal, event_key, event_type, ts, model,
    originating_model, tool_name, tool_call_id, exit_code, is_error, text, arguments, summary,
    summary_truncated, raw, searchable, self_tool, doc_len, line_no, batch
FROM event_ingest;
-- in moraine_local
ALTER TABLE moraine_local.term_df ON CLUSTER moraine MODIFY SETTING replicated_deduplication_window = 10000;
-- in moraine_local
ALTER TABLE moraine_local.corpus_stats ON CLUSTER moraine MODIFY SETTING replicated_deduplication_window = 10000;

-- 009_impact_tiers
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.postings_tiered ON CLUSTER moraine
(
    term     UInt64,
    sess     UInt64,
    doc      UInt64,
    tf       UInt16,
    doc_len  UInt16,
    kind     UInt8,
    turn     UInt32 CODEC(Delta, LZ4),
    tier     UInt8 DEFAULT toUInt8(
        multiIf(tf <= 3, greatest(tf, 1) - 1, tf <= 5, 3, tf <= 8, 4, tf <= 16, 5, tf <= 32, 6, 7) * 16
        + multiIf(doc_len < 8, 0, doc_len < 16, 1, doc_len < 32, 2, doc_len < 64, 3, doc_len < 128, 4,
                  doc_len < 256, 5, doc_len < 512, 6, doc_len < 1024, 7, doc_len < 2048, 8, 9))
)
ENGINE = ReplicatedMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}')
ORDER BY (term, tier, sess, doc)
SETTINGS index_granularity = 1024;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.postings_tiered ON CLUSTER moraine AS moraine_local.postings_tiered
ENGINE = Distributed('moraine', 'moraine_local', 'postings_tiered', sess);
-- only if: SELECT toUInt8(sorting_key = 'term, sess, doc') FROM system.tables WHERE database = currentDatabase() AND name = 'postings'
-- (checked in moraine_local)
-- in moraine_local
TRUNCATE TABLE moraine_local.postings_tiered ON CLUSTER moraine;
-- only if: SELECT toUInt8(sorting_key = 'term, sess, doc') FROM system.tables WHERE database = currentDatabase() AND name = 'postings'
-- (checked in moraine_local)
-- in moraine
INSERT INTO postings_tiered (term, sess, doc, tf, doc_len, kind, turn)
SELECT term, sess, doc, tf, doc_len, kind, turn FROM postings;
-- in moraine_local
DROP VIEW IF EXISTS moraine_local.postings_mv ON CLUSTER moraine;
-- only if: SELECT toUInt8(sorting_key = 'term, sess, doc') FROM system.tables WHERE database = currentDatabase() AND name = 'postings'
-- (checked in moraine_local)
-- in moraine_local
RENAME TABLE moraine_local.postings TO moraine_local.postings_unordered, moraine_local.postings_tiered TO moraine_local.postings ON CLUSTER moraine;
-- (whether or not the condition above held)
-- in moraine
DROP TABLE IF EXISTS moraine.postings ON CLUSTER moraine SYNC;
-- (whether or not the condition above held)
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.postings ON CLUSTER moraine AS moraine_local.postings
ENGINE = Distributed('moraine', 'moraine_local', 'postings', sess);
-- in moraine_local
DROP TABLE IF EXISTS moraine_local.postings_unordered ON CLUSTER moraine SYNC;
-- in moraine
DROP TABLE IF EXISTS moraine.postings_tiered ON CLUSTER moraine SYNC;
-- in moraine_local
DROP TABLE IF EXISTS moraine_local.postings_tiered ON CLUSTER moraine SYNC;
-- in moraine_local
CREATE MATERIALIZED VIEW IF NOT EXISTS moraine_local.postings_mv ON CLUSTER moraine TO moraine_local.postings AS
SELECT
    term,
    session_key AS sess,
    event_key AS doc,
    tf,
    doc_len,
    toUInt8(toUInt8(event_type) + 128 * self_tool) AS kind,
    turn_ordinal AS turn
FROM event_ingest
ARRAY JOIN terms AS term, tfs AS tf
WHERE searchable;
-- in moraine_local
SELECT throwIf(sorting_key != 'term, tier, sess, doc', 'postings was not re-keyed') FROM system.tables
WHERE database = currentDatabase() AND name = 'postings';

-- 010_point_lookups
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.turns_fine ON CLUSTER moraine
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}', version)
ORDER BY (session_key, ordinal)
SETTINGS index_granularity = 128, index_granularity_bytes = 65536,
         min_compress_block_size = 4096, max_compress_block_size = 65536;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.turns_fine ON CLUSTER moraine AS moraine_local.turns_fine
ENGINE = Distributed('moraine', 'moraine_local', 'turns_fine', session_key);
-- only if: SELECT toUInt8(engine_full NOT LIKE '%index_granularity = 128,%') FROM system.tables WHERE database = currentDatabase() AND name = 'turns'
-- (checked in moraine_local)
-- in moraine_local
TRUNCATE TABLE moraine_local.turns_fine ON CLUSTER moraine;
-- only if: SELECT toUInt8(engine_full NOT LIKE '%index_granularity = 128,%') FROM system.tables WHERE database = currentDatabase() AND name = 'turns'
-- (checked in moraine_local)
-- in moraine
INSERT INTO turns_fine (session_key, ordinal, completed, terminal_event_key, event_count, started_at, updated_at,
                        user_event_key, user_preview, user_truncated, final_event_key, final_preview,
                        final_truncated, tools_called, event_types, version)
SELECT session_key, ordinal, completed, terminal_event_key, event_count, started_at, updated_at,
       user_event_key, user_preview, user_truncated, final_event_key, final_preview,
       final_truncated, tools_called, event_types, version
FROM turns;
-- only if: SELECT toUInt8(engine_full NOT LIKE '%index_granularity = 128,%') FROM system.tables WHERE database = currentDatabase() AND name = 'turns'
-- (checked in moraine_local)
-- in moraine_local
RENAME TABLE moraine_local.turns TO moraine_local.turns_coarse, moraine_local.turns_fine TO moraine_local.turns ON CLUSTER moraine;
-- (whether or not the condition above held)
-- in moraine
DROP TABLE IF EXISTS moraine.turns ON CLUSTER moraine SYNC;
-- (whether or not the condition above held)
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.turns ON CLUSTER moraine AS moraine_local.turns
ENGINE = Distributed('moraine', 'moraine_local', 'turns', session_key);
-- only if: SELECT toUInt8(countIf(name = 'turns') = 0 AND countIf(name = 'turns_fine') = 1) FROM system.tables WHERE database = currentDatabase()
-- (checked in moraine_local)
-- in moraine_local
RENAME TABLE moraine_local.turns_fine TO moraine_local.turns ON CLUSTER moraine;
-- (whether or not the condition above held)
-- in moraine
DROP TABLE IF EXISTS moraine.turns ON CLUSTER moraine SYNC;
-- (whether or not the condition above held)
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.turns ON CLUSTER moraine AS moraine_local.turns
ENGINE = Distributed('moraine', 'moraine_local', 'turns', session_key);
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'turns' AND engine_full LIKE '%index_granularity = 128,%'
-- (checked in moraine_local)
-- in moraine_local
DROP TABLE IF EXISTS moraine_local.turns_coarse ON CLUSTER moraine SYNC;
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'turns' AND engine_full LIKE '%index_granularity = 128,%'
-- (checked in moraine_local)
-- in moraine
DROP TABLE IF EXISTS moraine.turns_fine ON CLUSTER moraine SYNC;
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'turns' AND engine_full LIKE '%index_granularity = 128,%'
-- (checked in moraine_local)
-- in moraine_local
DROP TABLE IF EXISTS moraine_local.turns_fine ON CLUSTER moraine SYNC;
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.sessions_fine ON CLUSTER moraine
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}', version)
ORDER BY session_key
SETTINGS index_granularity = 128, index_granularity_bytes = 65536,
         min_compress_block_size = 4096, max_compress_block_size = 65536;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.sessions_fine ON CLUSTER moraine AS moraine_local.sessions_fine
ENGINE = Distributed('moraine', 'moraine_local', 'sessions_fine', session_key);
-- only if: SELECT toUInt8(engine_full NOT LIKE '%index_granularity = 128,%') FROM system.tables WHERE database = currentDatabase() AND name = 'sessions'
-- (checked in moraine_local)
-- in moraine_local
TRUNCATE TABLE moraine_local.sessions_fine ON CLUSTER moraine;
-- only if: SELECT toUInt8(engine_full NOT LIKE '%index_granularity = 128,%') FROM system.tables WHERE database = currentDatabase() AND name = 'sessions'
-- (checked in moraine_local)
-- in moraine
INSERT INTO sessions_fine (session_key, harness, source, native_id, title, slug, summary, cwd, model, started_at,
                           updated_at, turn_count, event_count, completed, mode, version)
SELECT session_key, harness, source, native_id, title, slug, summary, cwd, model, started_at,
       updated_at, turn_count, event_count, completed, mode, version
FROM sessions;
-- only if: SELECT toUInt8(engine_full NOT LIKE '%index_granularity = 128,%') FROM system.tables WHERE database = currentDatabase() AND name = 'sessions'
-- (checked in moraine_local)
-- in moraine_local
RENAME TABLE moraine_local.sessions TO moraine_local.sessions_coarse, moraine_local.sessions_fine TO moraine_local.sessions ON CLUSTER moraine;
-- (whether or not the condition above held)
-- in moraine
DROP TABLE IF EXISTS moraine.sessions ON CLUSTER moraine SYNC;
-- (whether or not the condition above held)
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.sessions ON CLUSTER moraine AS moraine_local.sessions
ENGINE = Distributed('moraine', 'moraine_local', 'sessions', session_key);
-- only if: SELECT toUInt8(countIf(name = 'sessions') = 0 AND countIf(name = 'sessions_fine') = 1) FROM system.tables WHERE database = currentDatabase()
-- (checked in moraine_local)
-- in moraine_local
RENAME TABLE moraine_local.sessions_fine TO moraine_local.sessions ON CLUSTER moraine;
-- (whether or not the condition above held)
-- in moraine
DROP TABLE IF EXISTS moraine.sessions ON CLUSTER moraine SYNC;
-- (whether or not the condition above held)
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.sessions ON CLUSTER moraine AS moraine_local.sessions
ENGINE = Distributed('moraine', 'moraine_local', 'sessions', session_key);
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'sessions' AND engine_full LIKE '%index_granularity = 128,%'
-- (checked in moraine_local)
-- in moraine_local
DROP TABLE IF EXISTS moraine_local.sessions_coarse ON CLUSTER moraine SYNC;
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'sessions' AND engine_full LIKE '%index_granularity = 128,%'
-- (checked in moraine_local)
-- in moraine
DROP TABLE IF EXISTS moraine.sessions_fine ON CLUSTER moraine SYNC;
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'sessions' AND engine_full LIKE '%index_granularity = 128,%'
-- (checked in moraine_local)
-- in moraine_local
DROP TABLE IF EXISTS moraine_local.sessions_fine ON CLUSTER moraine SYNC;
-- in moraine_local
SELECT throwIf(count() != 2, 'turns and sessions were not re-created') FROM system.tables
WHERE database = currentDatabase() AND name IN ('turns', 'sessions')
  AND engine_full LIKE '%index_granularity = 128,%';

-- 011_statistics_by_type
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.term_df_typed ON CLUSTER moraine
(
    term        UInt64,
    event_type  UInt8,
    df          Int64
)
ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}')
ORDER BY (term, event_type)
SETTINGS non_replicated_deduplication_window = 10000;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.term_df_typed ON CLUSTER moraine AS moraine_local.term_df_typed
ENGINE = Distributed('moraine', 'moraine_local', 'term_df_typed', term);
-- only if: SELECT toUInt8(sorting_key = 'term') FROM system.tables WHERE database = currentDatabase() AND name = 'term_df'
-- (checked in moraine_local)
-- in moraine_local
TRUNCATE TABLE moraine_local.term_df_typed ON CLUSTER moraine;
-- only if: SELECT toUInt8(sorting_key = 'term') FROM system.tables WHERE database = currentDatabase() AND name = 'term_df'
-- (checked in moraine_local)
-- in moraine
INSERT INTO term_df_typed (term, event_type, df)
SELECT term, toUInt8(kind % 128) AS event_type, toInt64(count()) FROM postings GROUP BY term, event_type;
-- in moraine_local
DROP VIEW IF EXISTS moraine_local.term_df_mv ON CLUSTER moraine;
-- only if: SELECT toUInt8(sorting_key = 'term') FROM system.tables WHERE database = currentDatabase() AND name = 'term_df'
-- (checked in moraine_local)
-- in moraine_local
RENAME TABLE moraine_local.term_df TO moraine_local.term_df_untyped, moraine_local.term_df_typed TO moraine_local.term_df ON CLUSTER moraine;
-- (whether or not the condition above held)
-- in moraine
DROP TABLE IF EXISTS moraine.term_df_untyped ON CLUSTER moraine SYNC;
-- (whether or not the condition above held)
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.term_df_untyped ON CLUSTER moraine AS moraine_local.term_df_untyped
ENGINE = Distributed('moraine', 'moraine_local', 'term_df_untyped', term);
-- (whether or not the condition above held)
-- in moraine
DROP TABLE IF EXISTS moraine.term_df ON CLUSTER moraine SYNC;
-- (whether or not the condition above held)
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.term_df ON CLUSTER moraine AS moraine_local.term_df
ENGINE = Distributed('moraine', 'moraine_local', 'term_df', term);
-- only if: SELECT toUInt8(countIf(name = 'term_df') = 0 AND countIf(name = 'term_df_typed') = 1) FROM system.tables WHERE database = currentDatabase()
-- (checked in moraine_local)
-- in moraine_local
RENAME TABLE moraine_local.term_df_typed TO moraine_local.term_df ON CLUSTER moraine;
-- (whether or not the condition above held)
-- in moraine
DROP TABLE IF EXISTS moraine.term_df ON CLUSTER moraine SYNC;
-- (whether or not the condition above held)
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.term_df ON CLUSTER moraine AS moraine_local.term_df
ENGINE = Distributed('moraine', 'moraine_local', 'term_df', term);
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'term_df' AND sorting_key = 'term, event_type'
-- (checked in moraine_local)
-- in moraine
DROP TABLE IF EXISTS moraine.term_df_untyped ON CLUSTER moraine SYNC;
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'term_df' AND sorting_key = 'term, event_type'
-- (checked in moraine_local)
-- in moraine_local
DROP TABLE IF EXISTS moraine_local.term_df_untyped ON CLUSTER moraine SYNC;
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'term_df' AND sorting_key = 'term, event_type'
-- (checked in moraine_local)
-- in moraine
DROP TABLE IF EXISTS moraine.term_df_typed ON CLUSTER moraine SYNC;
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'term_df' AND sorting_key = 'term, event_type'
-- (checked in moraine_local)
-- in moraine_local
DROP TABLE IF EXISTS moraine_local.term_df_typed ON CLUSTER moraine SYNC;
-- in moraine_local
CREATE MATERIALIZED VIEW IF NOT EXISTS moraine_local.term_df_mv ON CLUSTER moraine TO moraine_local.term_df AS
SELECT term, toUInt8(event_type) AS event_type, toInt64(count()) AS df
FROM event_ingest
ARRAY JOIN terms AS term
WHERE searchable
GROUP BY term, event_type;
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.corpus_stats_typed ON CLUSTER moraine
(
    event_type  UInt8,
    docs        Int64,
    total_len   Int64
)
ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}')
ORDER BY event_type
SETTINGS non_replicated_deduplication_window = 10000;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.corpus_stats_typed ON CLUSTER moraine AS moraine_local.corpus_stats_typed
ENGINE = Distributed('moraine', 'moraine_local', 'corpus_stats_typed', 0);
-- only if: SELECT toUInt8(sorting_key = 'k') FROM system.tables WHERE database = currentDatabase() AND name = 'corpus_stats'
-- (checked in moraine_local)
-- in moraine_local
TRUNCATE TABLE moraine_local.corpus_stats_typed ON CLUSTER moraine;
-- only if: SELECT toUInt8(sorting_key = 'k') FROM system.tables WHERE database = currentDatabase() AND name = 'corpus_stats'
-- (checked in moraine_local)
-- in moraine
INSERT INTO corpus_stats_typed (event_type, docs, total_len)
SELECT toUInt8(event_type) AS t, toInt64(count()), toInt64(sum(doc_len)) FROM events WHERE searchable GROUP BY t;
-- in moraine_local
DROP VIEW IF EXISTS moraine_local.corpus_stats_mv ON CLUSTER moraine;
-- only if: SELECT toUInt8(sorting_key = 'k') FROM system.tables WHERE database = currentDatabase() AND name = 'corpus_stats'
-- (checked in moraine_local)
-- in moraine_local
RENAME TABLE moraine_local.corpus_stats TO moraine_local.corpus_stats_untyped, moraine_local.corpus_stats_typed TO moraine_local.corpus_stats ON CLUSTER moraine;
-- (whether or not the condition above held)
-- in moraine
DROP TABLE IF EXISTS moraine.corpus_stats_untyped ON CLUSTER moraine SYNC;
-- (whether or not the condition above held)
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.corpus_stats_untyped ON CLUSTER moraine AS moraine_local.corpus_stats_untyped
ENGINE = Distributed('moraine', 'moraine_local', 'corpus_stats_untyped', 0);
-- (whether or not the condition above held)
-- in moraine
DROP TABLE IF EXISTS moraine.corpus_stats ON CLUSTER moraine SYNC;
-- (whether or not the condition above held)
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.corpus_stats ON CLUSTER moraine AS moraine_local.corpus_stats
ENGINE = Distributed('moraine', 'moraine_local', 'corpus_stats', 0);
-- only if: SELECT toUInt8(countIf(name = 'corpus_stats') = 0 AND countIf(name = 'corpus_stats_typed') = 1) FROM system.tables WHERE database = currentDatabase()
-- (checked in moraine_local)
-- in moraine_local
RENAME TABLE moraine_local.corpus_stats_typed TO moraine_local.corpus_stats ON CLUSTER moraine;
-- (whether or not the condition above held)
-- in moraine
DROP TABLE IF EXISTS moraine.corpus_stats ON CLUSTER moraine SYNC;
-- (whether or not the condition above held)
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.corpus_stats ON CLUSTER moraine AS moraine_local.corpus_stats
ENGINE = Distributed('moraine', 'moraine_local', 'corpus_stats', 0);
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'corpus_stats' AND sorting_key = 'event_type'
-- (checked in moraine_local)
-- in moraine
DROP TABLE IF EXISTS moraine.corpus_stats_untyped ON CLUSTER moraine SYNC;
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'corpus_stats' AND sorting_key = 'event_type'
-- (checked in moraine_local)
-- in moraine_local
DROP TABLE IF EXISTS moraine_local.corpus_stats_untyped ON CLUSTER moraine SYNC;
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'corpus_stats' AND sorting_key = 'event_type'
-- (checked in moraine_local)
-- in moraine
DROP TABLE IF EXISTS moraine.corpus_stats_typed ON CLUSTER moraine SYNC;
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'corpus_stats' AND sorting_key = 'event_type'
-- (checked in moraine_local)
-- in moraine_local
DROP TABLE IF EXISTS moraine_local.corpus_stats_typed ON CLUSTER moraine SYNC;
-- in moraine_local
CREATE MATERIALIZED VIEW IF NOT EXISTS moraine_local.corpus_stats_mv ON CLUSTER moraine TO moraine_local.corpus_stats AS
SELECT
    toUInt8(event_type) AS event_type,
    toInt64(count()) AS docs,
    toInt64(sum(doc_len)) AS total_len
FROM event_ingest
WHERE searchable
GROUP BY event_type;
-- in moraine_local
SELECT throwIf(count() != 2, 'term_df and corpus_stats were not re-keyed by event type') FROM system.tables
WHERE database = currentDatabase()
  AND ((name = 'term_df' AND sorting_key = 'term, event_type') OR (name = 'corpus_stats' AND sorting_key = 'event_type'));

-- 012_index_format
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.index_format ON CLUSTER moraine
(
    format      UInt32,
    recorded_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{uuid}/all', '{shard}-{replica}')
ORDER BY format;
-- only if: SELECT toUInt8(count() = 0) FROM events
-- (checked in moraine)
-- in moraine
INSERT INTO index_format (format) VALUES (2);

-- 013_session_vectors
-- in moraine_local
CREATE TABLE IF NOT EXISTS moraine_local.session_vectors ON CLUSTER moraine
(
    sess    UInt64,
    vector  Array(Float32),
    version UInt64
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}', version)
ORDER BY sess;
-- in moraine
CREATE TABLE IF NOT EXISTS moraine.session_vectors ON CLUSTER moraine AS moraine_local.session_vectors
ENGINE = Distributed('moraine', 'moraine_local', 'session_vectors', sess);
-- only if: SELECT toUInt8(count() = 0) FROM events
-- (checked in moraine)
-- in moraine
INSERT INTO index_format (format) VALUES (3);
