//! `search_sessions`' statements, the fixed fragments spliced into them (`«name»` markers, see
//! [`crate::db::splice`]), and the rows they return.

use serde::Deserialize;

/// Scores documents with BM25; the statistics arrive as parameters. Ties break by event time
/// (the high bits of `doc`), then event ID. `«turn»`, `«score»` and `«group»` come from
/// [`ScoreShape`], `«scope»` from the scope and filters.
const SCORE_SQL: &str = "
SELECT sess, doc, «turn» AS turn_ordinal, «score» AS score
FROM postings
WHERE term IN {terms:Array(UInt64)} AND kind IN {kinds:Array(UInt8)} «scope»
«group»
ORDER BY score DESC, bitShiftRight(doc, 20) DESC, sess ASC, doc ASC
LIMIT {limit:UInt32}";

/// One posting's BM25 contribution.
const CONTRIBUTION: &str =
    "transform(term, {terms:Array(UInt64)}, {idfs:Array(Float64)}, 0.) * tf * ({k1:Float64} + 1)
        / (tf + {k1:Float64} * (1 - {b:Float64} + {b:Float64} * doc_len / {avgdl:Float64}))";

pub(super) const SCOPE_SESSION: &str = "AND sess = {s:UInt64}";
pub(super) const SCOPE_TURN: &str = "AND sess = {s:UInt64} AND turn = {t:UInt32}";
pub(super) const FILTER_HARNESS: &str =
    "AND sess IN (SELECT session_key FROM sessions FINAL WHERE harness = {harness:String})";
/// Only sessions the caller may see (see `Visibility`).
pub(super) const FILTER_VISIBLE: &str =
    "AND sess IN (SELECT session_key FROM sessions FINAL WHERE source IN {visible:Array(String)})";
pub(super) const FILTER_SOURCE: &str =
    "AND sess IN (SELECT session_key FROM sessions FINAL WHERE source = {source:String})";
/// Only a project's sessions (see `ProjectMatch`).
pub(super) const FILTER_PROJECT: &str = concat!(
    "AND sess IN (SELECT session_key FROM sessions FINAL WHERE ",
    crate::tools::project::project_condition!(),
    ")"
);

/// Only sessions active in a window: updated at or after its start, started before its end
/// (as `list_sessions` reads a window).
pub(super) const FILTER_WINDOW: &str = "AND sess IN (SELECT session_key FROM sessions FINAL \
     WHERE updated_at >= {from:DateTime64(3, 'UTC')} AND started_at < {to:DateTime64(3, 'UTC')})";

/// Only some tiers of the terms' postings (see `tiers`): key ranges of the index.
pub(super) const FILTER_TIERS: &str = "AND (term, tier) IN {tiers:Array(Tuple(UInt64, UInt8))}";

/// The tiers the query's terms have postings in, and how many, read in key order (two columns,
/// no hashing).
pub(super) const TIERS_SQL: &str = "SELECT term, tier, count() FROM postings \
     WHERE term IN {terms:Array(UInt64)} \
     GROUP BY term, tier SETTINGS optimize_aggregation_in_order = 1";

/// How postings become document scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ScoreShape {
    /// Several terms: a document's postings are summed.
    Summed,
    /// One term: a document has exactly one posting (postings are unique per term and event),
    /// so it is its own score and the hash aggregation, more than half the work, is skipped.
    /// `sum` of one value is that value, so scores are bit-for-bit those of [`Self::Summed`].
    Single,
}

impl ScoreShape {
    pub(super) fn for_terms(terms: usize) -> Self {
        if terms == 1 {
            Self::Single
        } else {
            Self::Summed
        }
    }

    /// The scoring statement with `scope` (fixed fragments, space-separated) spliced in.
    pub(super) fn sql(self, scope: &str) -> String {
        let summed = format!("sum({CONTRIBUTION})");
        let (turn, score, group) = match self {
            Self::Summed => ("any(turn)", summed.as_str(), "GROUP BY sess, doc"),
            Self::Single => ("turn", CONTRIBUTION, ""),
        };
        crate::db::splice(
            SCORE_SQL,
            &[
                ("turn", turn),
                ("score", score),
                ("scope", scope),
                ("group", group),
            ],
        )
    }
}

/// The sessions closest in meaning to a question's vector `q`, closest first (ties by session
/// key, so an answer is stable). `«filters»` are the search's filters (they name the session
/// `sess`, as this table does).
pub(super) const CLOSEST_SESSIONS_SQL: &str = "
SELECT sess FROM session_vectors FINAL
WHERE true «filters»
ORDER BY cosineDistance(vector, {q:Array(Float32)}) ASC, sess ASC
LIMIT {n:UInt32}";

/// How often each of the query's terms occurs in each of some sessions, over their events of the
/// searched types (see `session_score`).
pub(super) const SESSION_TERMS_SQL: &str = "
SELECT sess, term, sum(tf) AS n FROM postings
WHERE term IN {terms:Array(UInt64)} AND sess IN {sessions:Array(UInt64)} AND kind IN {kinds:Array(UInt8)}
GROUP BY sess, term";

/// One scored document.
#[derive(Debug, Clone, clickhouse::Row, Deserialize)]
pub(super) struct Scored {
    pub sess: u64,
    pub doc: u64,
    pub turn_ordinal: u32,
    pub score: f64,
}

impl Scored {
    /// The scoring statement's order ([`SCORE_SQL`]'s `ORDER BY`), for scores changed after it:
    /// score descending, then event time descending (the high bits of the event key), then
    /// session and event key ascending.
    pub(super) fn ranked(a: &Self, b: &Self) -> std::cmp::Ordering {
        b.score
            .total_cmp(&a.score)
            .then((b.doc >> 20).cmp(&(a.doc >> 20)))
            .then(a.sess.cmp(&b.sess))
            .then(a.doc.cmp(&b.doc))
    }
}

#[cfg(test)]
impl Scored {
    /// A scored document of turn 1.
    pub(super) fn of(sess: u64, doc: u64, score: f64) -> Self {
        Self {
            sess,
            doc,
            turn_ordinal: 1,
            score,
        }
    }
}

/// The hits' events (with text for snippets), their turns and their sessions, in one statement
/// (each table an embedded-engine statement reads costs about 2 ms; one UNION reads all three).
/// Every part fills the same columns; [`DetailRow`] says what they mean per part. The text is
/// cut at a byte count, so a character split by the cut is replaced (`toValidUTF8`).
pub(super) const DETAILS_SQL: &str = "
SELECT toUInt8(1) AS part, session_key, event_key AS key, ordinal AS n1, turn_ordinal AS n2, toUInt32(event_type) AS n3,
       false AS flag, toUnixTimestamp64Milli(ts) AS t1, toInt64(0) AS t2, toValidUTF8(substring(text, 1, {text_bytes:UInt32})) AS s1,
       '' AS s2, '' AS s3, '' AS s4
FROM events WHERE session_key IN {sessions:Array(UInt64)} AND event_key IN {events:Array(UInt64)}
UNION ALL
SELECT toUInt8(2), session_key, toUInt64(ordinal), ordinal, event_count, toUInt32(0), completed, reinterpretAsInt64(terminal_event_key),
       toInt64(0), '', '', '', ''
FROM turns FINAL
WHERE session_key IN {sessions:Array(UInt64)} AND (session_key, ordinal) IN {turns:Array(Tuple(UInt64, UInt32))}
UNION ALL
SELECT toUInt8(3), session_key, toUInt64(0), toUInt32(0), toUInt32(0), toUInt32(0), completed, toUnixTimestamp64Milli(started_at),
       toUnixTimestamp64Milli(updated_at), title, toString(harness), toString(source), cwd
FROM sessions FINAL WHERE session_key IN {sessions:Array(UInt64)}";

/// A row of [`DETAILS_SQL`] as it travels: the columns every part shares. [`Detail`] is what it
/// means.
#[derive(Debug, clickhouse::Row, Deserialize)]
pub(super) struct DetailRow {
    part: u8,
    session_key: u64,
    key: u64,
    n1: u32,
    n2: u32,
    n3: u32,
    flag: bool,
    t1: i64,
    t2: i64,
    s1: String,
    s2: String,
    s3: String,
    s4: String,
}

/// A hit's event: its position, type, time and (the start of) its text.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct EventDetail {
    pub session: u64,
    pub event: u64,
    pub ordinal: u32,
    pub turn_ordinal: u32,
    pub event_type: u8,
    pub ts: i64,
    pub text: String,
}

/// A hit's turn.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TurnDetail {
    pub session: u64,
    pub ordinal: u32,
    pub event_count: u32,
    pub completed: bool,
    pub terminal_event: u64,
}

/// A hit's session.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SessionDetail {
    pub session: u64,
    pub completed: bool,
    pub started_at: i64,
    pub updated_at: i64,
    pub title: String,
    pub harness: String,
    pub source: String,
    /// The working directory the log records (`''` when none).
    pub cwd: String,
}

/// One decoded row of [`DETAILS_SQL`].
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Detail {
    Event(EventDetail),
    Turn(TurnDetail),
    Session(SessionDetail),
}

impl From<DetailRow> for Detail {
    fn from(row: DetailRow) -> Self {
        match row.part {
            1 => Self::Event(EventDetail {
                session: row.session_key,
                event: row.key,
                ordinal: row.n1,
                turn_ordinal: row.n2,
                event_type: row.n3 as u8,
                ts: row.t1,
                text: row.s1,
            }),
            2 => Self::Turn(TurnDetail {
                session: row.session_key,
                ordinal: row.n1,
                event_count: row.n2,
                completed: row.flag,
                // The key travels as Int64 (reinterpreted) to share the column with times.
                terminal_event: row.t1 as u64,
            }),
            _ => Self::Session(SessionDetail {
                session: row.session_key,
                completed: row.flag,
                started_at: row.t1,
                updated_at: row.t2,
                title: row.s1,
                harness: row.s2,
                source: row.s3,
                cwd: row.s4,
            }),
        }
    }
}

/// Whether the scope of an empty scoped search exists (`not_found` otherwise); asked only when
/// nothing matched, so scoped searches that find something take no extra round trip.
/// (A session exists when its first turn does.)
pub(super) const SCOPE_EXISTS_SQL: &str =
    "SELECT count() FROM turns WHERE session_key = {s:UInt64} AND ordinal = {t:UInt32} «visible»";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_score_statements_keep_their_parameters_and_drop_the_markers() {
        let single = ScoreShape::Single.sql(SCOPE_TURN);
        assert!(single.contains("AND sess = {s:UInt64} AND turn = {t:UInt32}"));
        assert!(!single.contains("GROUP BY") && !single.contains('«'));
        let summed = ScoreShape::Summed.sql("");
        assert!(summed.contains("sum(transform(term") && summed.contains("GROUP BY sess, doc"));
        assert_eq!(ScoreShape::for_terms(1), ScoreShape::Single);
        let project = ScoreShape::Single.sql(FILTER_PROJECT);
        assert!(
            project.contains("{project_prefix:String}")
                && project.ends_with("LIMIT {limit:UInt32}")
        );
        assert_eq!(ScoreShape::for_terms(2), ScoreShape::Summed);
    }
}
