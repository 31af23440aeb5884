-- BM25 index: postings plus precomputed document-frequency and corpus statistics.
--
-- Postings carry everything scoring and filtering need (tf, doc_len, event kind, turn ordinal),
-- so a query never joins back to the documents. ORDER BY (term, sess, doc) serves global queries as a
-- term-prefix range and session-scoped ones as a (term, sess) range. Event keys carry the event
-- time in their high bits, which gives the spec's timestamp tie-break without a timestamp column.
-- `kind` packs the event type (low 7 bits) with the "this service's own tool traffic" flag (bit 7).

CREATE TABLE IF NOT EXISTS postings
(
    term     UInt64,
    sess     UInt64,
    doc      UInt64,
    tf       UInt16,
    doc_len  UInt16,
    kind     UInt8,
    turn     UInt32 CODEC(Delta, LZ4)
)
ENGINE = MergeTree
ORDER BY (term, sess, doc)
SETTINGS index_granularity = 1024;

CREATE MATERIALIZED VIEW IF NOT EXISTS postings_mv TO postings AS
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

-- Document frequency per term. Retracting documents inserts negative counts, so the sum stays
-- exact; readers always aggregate with sum(df).
CREATE TABLE IF NOT EXISTS term_df
(
    term  UInt64,
    df    Int64
)
ENGINE = SummingMergeTree
ORDER BY term;

CREATE MATERIALIZED VIEW IF NOT EXISTS term_df_mv TO term_df AS
SELECT term, toInt64(count()) AS df
FROM event_ingest
ARRAY JOIN terms AS term
WHERE searchable
GROUP BY term;

-- Corpus size and total document length, for N and avgdl.
CREATE TABLE IF NOT EXISTS corpus_stats
(
    k          UInt8,
    docs       Int64,
    total_len  Int64
)
ENGINE = SummingMergeTree
ORDER BY k;

CREATE MATERIALIZED VIEW IF NOT EXISTS corpus_stats_mv TO corpus_stats AS
SELECT
    toUInt8(0) AS k,
    toInt64(countIf(searchable)) AS docs,
    toInt64(sumIf(doc_len, searchable)) AS total_len
FROM event_ingest;
