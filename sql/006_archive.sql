-- The archive: the raw bytes of every log pushed to this service (and of local logs when
-- `ingest.archive_local` is set), so that harnesses pruning their own logs lose nothing and
-- `moraine-mcp reindex` can re-parse everything after an adapter fix.
--
-- A file's bytes are stored as the chunks they arrived in, keyed by the file and the offset of
-- the chunk. A file that was replaced (truncated or rewritten, and re-sent from the start)
-- begins a new generation; readers only read the generation its checkpoint names. A chunk
-- re-sent at the same offset replaces the stored one.

CREATE TABLE IF NOT EXISTS raw_chunks
(
    file_key     UInt64,
    generation   UInt32,
    offset       UInt64,
    data         String CODEC(ZSTD(3)),
    received_at  DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(received_at)
ORDER BY (file_key, generation, offset);

-- Checkpoints now name a file by (source, harness, path), not by its session: `received` is
-- how many bytes of it are archived (at least `offset`, the bytes parsed), `generation` the
-- archive generation, `origin` `local` or `push`, `updated_at` the last write.
ALTER TABLE ingest_checkpoints ADD COLUMN IF NOT EXISTS received UInt64 DEFAULT offset;
ALTER TABLE ingest_checkpoints ADD COLUMN IF NOT EXISTS generation UInt32 DEFAULT 0;
ALTER TABLE ingest_checkpoints ADD COLUMN IF NOT EXISTS origin LowCardinality(String) DEFAULT 'local';
ALTER TABLE ingest_checkpoints ADD COLUMN IF NOT EXISTS updated_at DateTime64(3, 'UTC') DEFAULT now64(3);

-- Checkpoints of earlier versions were keyed by session; their files are read again once, from
-- the start, under their new keys (which replaces what they wrote).
DELETE FROM ingest_checkpoints WHERE file_key = session_key;
