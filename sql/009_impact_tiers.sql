-- Impact tiers: a second order of the postings, for global queries made of frequent words.
--
-- Each posting falls in a tier by its term frequency (8 classes) and its document's length (10
-- classes): `tier` = tf class * 16 + length class. Within a tier, a posting's BM25 contribution
-- is at most what the tier's largest tf and shortest length give, whatever the corpus
-- statistics are at query time. The projection orders postings by (term, tier), so a query can
-- read only the tiers whose bound can still reach the top k, and `term_tiers` lists the tiers
-- each term has (a superset: retractions leave it, which only loosens a bound).
ALTER TABLE postings ADD COLUMN IF NOT EXISTS tier UInt8 DEFAULT toUInt8(
    multiIf(tf <= 3, greatest(tf, 1) - 1, tf <= 5, 3, tf <= 8, 4, tf <= 16, 5, tf <= 32, 6, 7) * 16
    + multiIf(doc_len < 8, 0, doc_len < 16, 1, doc_len < 32, 2, doc_len < 64, 3, doc_len < 128, 4,
              doc_len < 256, 5, doc_len < 512, 6, doc_len < 1024, 7, doc_len < 2048, 8, 9));

ALTER TABLE postings MATERIALIZE COLUMN tier SETTINGS mutations_sync = 2;

-- Deleting postings (a retraction) rebuilds the projection of the parts it touches.
ALTER TABLE postings MODIFY SETTING lightweight_mutation_projection_mode = 'rebuild';

ALTER TABLE postings ADD PROJECTION IF NOT EXISTS by_tier (SELECT * ORDER BY term, tier, sess, doc);

ALTER TABLE postings MATERIALIZE PROJECTION by_tier SETTINGS mutations_sync = 2;

CREATE TABLE IF NOT EXISTS term_tiers
(
    term  UInt64,
    tier  UInt8
)
ENGINE = ReplacingMergeTree
ORDER BY (term, tier);

-- Fed by the postings the index view writes, so a tier is listed in the insert that fills it.
CREATE MATERIALIZED VIEW IF NOT EXISTS term_tiers_mv TO term_tiers AS
SELECT DISTINCT term, tier FROM postings;

INSERT INTO term_tiers SELECT DISTINCT term, tier FROM postings;
