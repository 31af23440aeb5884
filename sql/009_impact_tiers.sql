-- Impact tiers: postings ordered by (term, tier, sess, doc), for global queries made of frequent
-- words.
--
-- Each posting falls in a tier by its term frequency (8 classes) and its document's length (10
-- classes): `tier` = tf class * 16 + length class. Within a tier, a posting's BM25 contribution
-- is at most what the tier's largest tf and shortest length give, whatever the corpus
-- statistics are at query time, so a query can read only the tiers whose bound can still reach
-- its top k. A session-scoped query still finds its postings by (term, sess) inside each tier.
--
-- The index is copied once into a table with the new order, which then takes the old one's
-- name; each step runs only while `postings` still has the old order, so a migration cut off
-- part way runs again cleanly. Nothing may write to the index while it is copied: stop the
-- service and ingest (`up`, `serve`, `ingest`, pushes) before upgrading to this version.
CREATE TABLE IF NOT EXISTS postings_tiered
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
ENGINE = MergeTree
ORDER BY (term, tier, sess, doc)
SETTINGS index_granularity = 1024;

-- only if: SELECT toUInt8(sorting_key = 'term, sess, doc') FROM system.tables WHERE database = currentDatabase() AND name = 'postings'
TRUNCATE TABLE postings_tiered;

-- only if: SELECT toUInt8(sorting_key = 'term, sess, doc') FROM system.tables WHERE database = currentDatabase() AND name = 'postings'
INSERT INTO postings_tiered (term, sess, doc, tf, doc_len, kind, turn)
SELECT term, sess, doc, tf, doc_len, kind, turn FROM postings;

-- The index view is re-created below to write into the table that now holds the name.
DROP VIEW IF EXISTS postings_mv;

-- A rename rather than EXCHANGE TABLES, which some filesystems cannot do.
-- only if: SELECT toUInt8(sorting_key = 'term, sess, doc') FROM system.tables WHERE database = currentDatabase() AND name = 'postings'
RENAME TABLE postings TO postings_unordered, postings_tiered TO postings;

DROP TABLE IF EXISTS postings_unordered;

DROP TABLE IF EXISTS postings_tiered;

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

-- The migration is recorded only if the index is in its new order.
SELECT throwIf(sorting_key != 'term, tier, sess, doc', 'postings was not re-keyed') FROM system.tables
WHERE database = currentDatabase() AND name = 'postings';
