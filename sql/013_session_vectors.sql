-- What each session says, as a vector: the sum of the token vectors of its prose (user inputs
-- and assistant responses) under a static embedding model, scaled to length 1. A global
-- search ranks sessions by their cosine with the question's vector and fuses that order with
-- its BM25 hits (see docs/how-it-works.md). Vectors are computed at ingest: a store with
-- events indexed before has none until `moraine-mcp reindex` rebuilds it (format 3).
CREATE TABLE IF NOT EXISTS session_vectors
(
    sess    UInt64,
    vector  Array(Float32),
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY sess;

-- A store with nothing indexed yet is of this format from the start.
-- only if: SELECT toUInt8(count() = 0) FROM events
INSERT INTO index_format (format) VALUES (3);
