-- Small granules for `turns` and `sessions`, which are read a few rows at a time by key:
-- `open` reads an event's turn and its neighbours, a session's row and its turns; a search
-- reads its hits' turns and sessions. With the default granule of 8192 rows, each of those
-- reads decompressed thousands of rows' previews and titles for a handful of rows.
--
-- Neither setting can be changed on an existing table, so each table is copied once into one
-- with the new settings, which then takes the old one's name; each step runs only while the
-- table still has the old settings, so a migration cut off part way runs again cleanly. As
-- for 009, stop the service and ingest before upgrading: rows written during the copy would
-- be left behind.
CREATE TABLE IF NOT EXISTS turns_fine
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
ORDER BY (session_key, ordinal)
SETTINGS index_granularity = 128, index_granularity_bytes = 65536,
         min_compress_block_size = 4096, max_compress_block_size = 65536;

-- only if: SELECT toUInt8(engine_full NOT LIKE '%index_granularity = 128,%') FROM system.tables WHERE database = currentDatabase() AND name = 'turns'
TRUNCATE TABLE turns_fine;

-- only if: SELECT toUInt8(engine_full NOT LIKE '%index_granularity = 128,%') FROM system.tables WHERE database = currentDatabase() AND name = 'turns'
INSERT INTO turns_fine (session_key, ordinal, completed, terminal_event_key, event_count, started_at, updated_at,
                        user_event_key, user_preview, user_truncated, final_event_key, final_preview,
                        final_truncated, tools_called, event_types, version)
SELECT session_key, ordinal, completed, terminal_event_key, event_count, started_at, updated_at,
       user_event_key, user_preview, user_truncated, final_event_key, final_preview,
       final_truncated, tools_called, event_types, version
FROM turns;

-- only if: SELECT toUInt8(engine_full NOT LIKE '%index_granularity = 128,%') FROM system.tables WHERE database = currentDatabase() AND name = 'turns'
RENAME TABLE turns TO turns_coarse, turns_fine TO turns;

-- A rename of two tables can stop between them, leaving no `turns`: the copy then takes the name.
-- only if: SELECT toUInt8(countIf(name = 'turns') = 0 AND countIf(name = 'turns_fine') = 1) FROM system.tables WHERE database = currentDatabase()
RENAME TABLE turns_fine TO turns;

-- The leftovers go only once `turns` is the new table.
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'turns' AND engine_full LIKE '%index_granularity = 128,%'
DROP TABLE IF EXISTS turns_coarse;

-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'turns' AND engine_full LIKE '%index_granularity = 128,%'
DROP TABLE IF EXISTS turns_fine;

CREATE TABLE IF NOT EXISTS sessions_fine
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
ORDER BY session_key
SETTINGS index_granularity = 128, index_granularity_bytes = 65536,
         min_compress_block_size = 4096, max_compress_block_size = 65536;

-- only if: SELECT toUInt8(engine_full NOT LIKE '%index_granularity = 128,%') FROM system.tables WHERE database = currentDatabase() AND name = 'sessions'
TRUNCATE TABLE sessions_fine;

-- only if: SELECT toUInt8(engine_full NOT LIKE '%index_granularity = 128,%') FROM system.tables WHERE database = currentDatabase() AND name = 'sessions'
INSERT INTO sessions_fine (session_key, harness, source, native_id, title, slug, summary, cwd, model, started_at,
                           updated_at, turn_count, event_count, completed, mode, version)
SELECT session_key, harness, source, native_id, title, slug, summary, cwd, model, started_at,
       updated_at, turn_count, event_count, completed, mode, version
FROM sessions;

-- only if: SELECT toUInt8(engine_full NOT LIKE '%index_granularity = 128,%') FROM system.tables WHERE database = currentDatabase() AND name = 'sessions'
RENAME TABLE sessions TO sessions_coarse, sessions_fine TO sessions;

-- A rename of two tables can stop between them, leaving no `sessions`: the copy then takes the name.
-- only if: SELECT toUInt8(countIf(name = 'sessions') = 0 AND countIf(name = 'sessions_fine') = 1) FROM system.tables WHERE database = currentDatabase()
RENAME TABLE sessions_fine TO sessions;

-- The leftovers go only once `sessions` is the new table.
-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'sessions' AND engine_full LIKE '%index_granularity = 128,%'
DROP TABLE IF EXISTS sessions_coarse;

-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'sessions' AND engine_full LIKE '%index_granularity = 128,%'
DROP TABLE IF EXISTS sessions_fine;

-- The migration is recorded only if both tables have their new granules.
SELECT throwIf(count() != 2, 'turns and sessions were not re-created') FROM system.tables
WHERE database = currentDatabase() AND name IN ('turns', 'sessions')
  AND engine_full LIKE '%index_granularity = 128,%';
