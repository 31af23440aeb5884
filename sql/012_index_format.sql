-- Which tokenizer built the index. The tokenizer of format 2 indexes an inflected word's
-- stem (`releases` -> `~releas`) and a prefixed version's bare version (`v1.12.3` ->
-- `1.12.3`); postings are computed at ingest, so a store indexed before cannot gain them
-- here: `moraine-mcp reindex` rebuilds the index from the stored logs and records the format
-- (see docs/operations.md). Until then searches work, but miss some inflections and versions.
CREATE TABLE IF NOT EXISTS index_format
(
    format      UInt32,
    recorded_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
ORDER BY format;

-- A store with nothing indexed yet is of this format from the start.
-- only if: SELECT toUInt8(count() = 0) FROM events
INSERT INTO index_format (format) VALUES (2);
