-- Index statistics per event type: a search ranks with the document frequencies, document
-- count and average length of the event types it searches, so the reasoning, tool calls and
-- bookkeeping records (progress, queue operations, state lines) a default search leaves out
-- do not make its words look rarer, or its documents shorter, than they are.
--
-- `term_df` gains the event type in its key and `corpus_stats` counts per event type (`k`
-- was always 0); every reader that wants the whole corpus still sums every row. Each table is
-- rebuilt once from what it counts (postings, events) into a table of the new shape, which
-- then takes the old one's name; each step runs only while the old shape stands, so a
-- migration cut off part way runs again cleanly. As for 009, stop the service and ingest
-- before upgrading: rows written during the copy would be left uncounted.
CREATE TABLE IF NOT EXISTS term_df_typed
(
    term        UInt64,
    event_type  UInt8,
    df          Int64
)
ENGINE = SummingMergeTree
ORDER BY (term, event_type)
SETTINGS non_replicated_deduplication_window = 10000;

-- only if: SELECT toUInt8(sorting_key = 'term') FROM system.tables WHERE database = currentDatabase() AND name = 'term_df'
TRUNCATE TABLE term_df_typed;

-- only if: SELECT toUInt8(sorting_key = 'term') FROM system.tables WHERE database = currentDatabase() AND name = 'term_df'
INSERT INTO term_df_typed (term, event_type, df)
SELECT term, toUInt8(kind % 128) AS event_type, toInt64(count()) FROM postings GROUP BY term, event_type;

DROP VIEW IF EXISTS term_df_mv;

-- only if: SELECT toUInt8(sorting_key = 'term') FROM system.tables WHERE database = currentDatabase() AND name = 'term_df'
RENAME TABLE term_df TO term_df_untyped, term_df_typed TO term_df;

-- A rename of two tables can stop between them, leaving no `term_df`: the copy then takes the name.
-- only if: SELECT toUInt8(countIf(name = 'term_df') = 0 AND countIf(name = 'term_df_typed') = 1) FROM system.tables WHERE database = currentDatabase()
RENAME TABLE term_df_typed TO term_df;

-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'term_df' AND sorting_key = 'term, event_type'
DROP TABLE IF EXISTS term_df_untyped;

-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'term_df' AND sorting_key = 'term, event_type'
DROP TABLE IF EXISTS term_df_typed;

CREATE MATERIALIZED VIEW IF NOT EXISTS term_df_mv TO term_df AS
SELECT term, toUInt8(event_type) AS event_type, toInt64(count()) AS df
FROM event_ingest
ARRAY JOIN terms AS term
WHERE searchable
GROUP BY term, event_type;

CREATE TABLE IF NOT EXISTS corpus_stats_typed
(
    event_type  UInt8,
    docs        Int64,
    total_len   Int64
)
ENGINE = SummingMergeTree
ORDER BY event_type
SETTINGS non_replicated_deduplication_window = 10000;

-- only if: SELECT toUInt8(sorting_key = 'k') FROM system.tables WHERE database = currentDatabase() AND name = 'corpus_stats'
TRUNCATE TABLE corpus_stats_typed;

-- only if: SELECT toUInt8(sorting_key = 'k') FROM system.tables WHERE database = currentDatabase() AND name = 'corpus_stats'
INSERT INTO corpus_stats_typed (event_type, docs, total_len)
SELECT toUInt8(event_type) AS t, toInt64(count()), toInt64(sum(doc_len)) FROM events WHERE searchable GROUP BY t;

DROP VIEW IF EXISTS corpus_stats_mv;

-- only if: SELECT toUInt8(sorting_key = 'k') FROM system.tables WHERE database = currentDatabase() AND name = 'corpus_stats'
RENAME TABLE corpus_stats TO corpus_stats_untyped, corpus_stats_typed TO corpus_stats;

-- only if: SELECT toUInt8(countIf(name = 'corpus_stats') = 0 AND countIf(name = 'corpus_stats_typed') = 1) FROM system.tables WHERE database = currentDatabase()
RENAME TABLE corpus_stats_typed TO corpus_stats;

-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'corpus_stats' AND sorting_key = 'event_type'
DROP TABLE IF EXISTS corpus_stats_untyped;

-- only if: SELECT toUInt8(count() = 1) FROM system.tables WHERE database = currentDatabase() AND name = 'corpus_stats' AND sorting_key = 'event_type'
DROP TABLE IF EXISTS corpus_stats_typed;

CREATE MATERIALIZED VIEW IF NOT EXISTS corpus_stats_mv TO corpus_stats AS
SELECT
    toUInt8(event_type) AS event_type,
    toInt64(count()) AS docs,
    toInt64(sum(doc_len)) AS total_len
FROM event_ingest
WHERE searchable
GROUP BY event_type;

-- The migration is recorded only if both tables count per event type.
SELECT throwIf(count() != 2, 'term_df and corpus_stats were not re-keyed by event type') FROM system.tables
WHERE database = currentDatabase()
  AND ((name = 'term_df' AND sorting_key = 'term, event_type') OR (name = 'corpus_stats' AND sorting_key = 'event_type'));
