-- Writes that survive a killed ingest.
--
-- Every stored event names the write that stored it (`batch`, the batch's version), so two
-- copies of one event — a killed run's insert that landed after the next run had read its
-- checkpoints — are told apart and found, and a retraction knows which incarnation of a
-- session it removes.
--
-- Retractions subtract from `term_df` and `corpus_stats` with an insert deduplication token
-- naming that incarnation: a retraction cut off after subtracting and repeated by the next run
-- subtracts once. Event inserts switch deduplication off for the views, so two batches whose
-- statistics happen to be equal are never mistaken for one.
ALTER TABLE event_ingest ADD COLUMN IF NOT EXISTS batch UInt64;
ALTER TABLE events ADD COLUMN IF NOT EXISTS batch UInt64 DEFAULT 0 CODEC(Delta, ZSTD(1));

DROP VIEW IF EXISTS events_mv;
CREATE MATERIALIZED VIEW IF NOT EXISTS events_mv TO events AS
SELECT
    session_key, turn_ordinal, ordinal, event_key, event_type, ts, model,
    originating_model, tool_name, tool_call_id, exit_code, is_error, text, arguments, summary,
    summary_truncated, raw, searchable, self_tool, doc_len, line_no, batch
FROM event_ingest;

ALTER TABLE term_df MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE corpus_stats MODIFY SETTING non_replicated_deduplication_window = 10000;
