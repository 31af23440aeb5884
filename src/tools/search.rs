//! `search_sessions`: BM25 over the postings index, returning handles rather than payloads.
//!
//! Term document frequencies and corpus size come from the precomputed `term_df` and
//! `corpus_stats` tables through a short-lived cache (`tools::stats`) and reach the scoring
//! statement as parameters; postings carry everything scoring needs (the harness and source
//! filters consult `sessions`). A second statement fetches the hits' events, turns and sessions
//! for metadata and snippets.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::envelope::{Envelope, ToolError};
use super::{Context, Success, format_ts, optional_str, optional_u64};
use crate::ids::{self, Id, IdError};
use crate::tokenize::{query_terms, term_hash};
use crate::vocab::EventType;

pub const NAME: &str = "search_sessions";
pub const SCHEMA_VERSION: &str = "moraine.mcp.search_sessions.v1";
const DEFAULT_N_HITS: u32 = 10;

/// The canonical request: trimmed query, defaults applied, event types deduplicated in
/// canonical order.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SearchRequest {
    pub query: String,
    pub within_id: Option<String>,
    pub event_types: Vec<EventType>,
    pub n_hits: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SearchData {
    pub result_count: u32,
    pub limit: u32,
    /// More matches exist beyond `limit`.
    pub truncated: bool,
    pub results: Vec<Hit>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Hit {
    pub rank: u32,
    /// Relevance in 0.0–1.0, comparable within one response only.
    pub score: f64,
    pub id: String,
    pub event: HitEvent,
    pub turn: HitTurn,
    pub session: SessionBrief,
    pub snippet: Snippet,
    pub open: OpenRefs,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct HitEvent {
    pub id: String,
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub timestamp: String,
    pub ordinal: u32,
    pub terminal: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct HitTurn {
    pub id: String,
    pub ordinal: u32,
    pub completed: bool,
    pub event_count: u32,
}

/// Session metadata as shown on a hit.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SessionBrief {
    pub id: String,
    pub title: String,
    pub source: String,
    pub harness: String,
    pub started_at: String,
    pub updated_at: String,
    pub completed: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Snippet {
    pub text: String,
    /// The snippet is not the event's full text.
    pub truncated: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct OpenRefs {
    pub event_id: String,
    pub turn_id: String,
    pub session_id: String,
}

pub type SearchEnvelope = Envelope<SearchRequest, SearchData>;

/// Where a search looks.
enum Scope {
    All,
    Session { session: u64 },
    Turn { session: u64, ordinal: u32 },
}

#[derive(Debug, clickhouse::Row, Deserialize)]
struct Scored {
    sess: u64,
    doc: u64,
    turn_ordinal: u32,
    score: f64,
}

/// One row of [`DETAILS_SQL`]: `part` says which table it comes from and what the columns mean.
#[derive(Debug, clickhouse::Row, Deserialize)]
struct Detail {
    part: u8,
    session_key: u64,
    key: u64,
    a: u32,
    b: u32,
    c: u32,
    flag: bool,
    t1: i64,
    t2: i64,
    s1: String,
    s2: String,
    s3: String,
}

/// Scores documents with BM25; the statistics arrive as parameters. `{scope}` is one of the
/// fixed fragments below. Ties break by event time (the high bits of `doc`), then event ID.
/// `{turn}`, `{score}` and `{group}` come from [`ScoreShape`].
const SCORE_SQL: &str = "
SELECT sess, doc, {turn} AS turn_ordinal, {score} AS score
FROM postings
WHERE term IN {terms:Array(UInt64)} AND kind IN {kinds:Array(UInt8)} {scope}
{group}
ORDER BY score DESC, bitShiftRight(doc, 20) DESC, sess ASC, doc ASC
LIMIT {limit:UInt32}";

/// One posting's BM25 contribution.
const CONTRIBUTION: &str =
    "transform(term, {terms:Array(UInt64)}, {idfs:Array(Float64)}, 0.) * tf * ({k1:Float64} + 1)
        / (tf + {k1:Float64} * (1 - {b:Float64} + {b:Float64} * doc_len / {avgdl:Float64}))";

/// How postings become document scores.
#[derive(Clone, Copy)]
enum ScoreShape {
    /// Several terms: a document's postings are summed.
    Summed,
    /// One term: a document has exactly one posting (postings are unique per term and event),
    /// so it is its own score and the hash aggregation, more than half the work, is skipped.
    /// `sum` of one value is that value, so scores are bit-for-bit those of [`Self::Summed`].
    Single,
}

impl ScoreShape {
    fn sql(self, scope: &str) -> String {
        let (turn, score, group) = match self {
            Self::Summed => (
                "any(turn)",
                format!("sum({CONTRIBUTION})"),
                "GROUP BY sess, doc",
            ),
            Self::Single => ("turn", CONTRIBUTION.to_owned(), ""),
        };
        SCORE_SQL
            .replace("{scope}", scope)
            .replace("{turn}", turn)
            .replace("{score}", &score)
            .replace("{group}", group)
    }
}

const SCOPE_SESSION: &str = "AND sess = {s:UInt64}";
const SCOPE_TURN: &str = "AND sess = {s:UInt64} AND turn = {t:UInt32}";
const FILTER_HARNESS: &str =
    "AND sess IN (SELECT session_key FROM sessions FINAL WHERE harness = {harness:String})";
const FILTER_SOURCE: &str =
    "AND sess IN (SELECT session_key FROM sessions FINAL WHERE source = {source:String})";

/// The hits' events (with text for snippets), their turns and their sessions, in one statement:
/// part 1 events (key = event, a = ordinal, b = turn ordinal, c = type, t1 = time, s1 = text),
/// part 2 turns (key = turn, a = ordinal, b = event count, flag = completed, t1 = terminal event),
/// part 3 sessions (flag = completed, t1/t2 = started/updated, s1..s3 = title, harness, source).
const DETAILS_SQL: &str = "
SELECT toUInt8(1) AS part, session_key, event_key AS key, ordinal AS a, turn_ordinal AS b, toUInt32(event_type) AS c,
       false AS flag, toUnixTimestamp64Milli(ts) AS t1, toInt64(0) AS t2, substring(text, 1, {text_bytes:UInt32}) AS s1,
       '' AS s2, '' AS s3
FROM events WHERE session_key IN {sessions:Array(UInt64)} AND event_key IN {events:Array(UInt64)}
UNION ALL
SELECT toUInt8(2), session_key, toUInt64(ordinal), ordinal, event_count, toUInt32(0), completed, reinterpretAsInt64(terminal_event_key),
       toInt64(0), '', '', ''
FROM turns FINAL
WHERE session_key IN {sessions:Array(UInt64)} AND (session_key, ordinal) IN {turns:Array(Tuple(UInt64, UInt32))}
UNION ALL
SELECT toUInt8(3), session_key, toUInt64(0), toUInt32(0), toUInt32(0), toUInt32(0), completed, toUnixTimestamp64Milli(started_at),
       toUnixTimestamp64Milli(updated_at), title, toString(harness), toString(source)
FROM sessions FINAL WHERE session_key IN {sessions:Array(UInt64)}";

/// Snippets look at most this much of an event's text.
const SNIPPET_TEXT_BYTES: u32 = 256 * 1024;

/// Whether the scope of an empty scoped search exists (`not_found` otherwise); asked only when
/// nothing matched, so scoped searches that find something take no extra round trip.
/// (A session exists when its first turn does.)
const SCOPE_EXISTS_SQL: &str =
    "SELECT count() FROM turns WHERE session_key = {s:UInt64} AND ordinal = {t:UInt32}";

/// Parses the (already schema-valid) arguments into the canonical request.
pub fn canonical(args: &Map<String, Value>) -> SearchRequest {
    let query = optional_str(args, "query")
        .unwrap_or_default()
        .trim()
        .to_owned();
    let mut event_types: Vec<EventType> = match args.get("event_types") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().and_then(EventType::parse))
            .collect(),
        _ => EventType::DEFAULT_SEARCH.to_vec(),
    };
    event_types.sort();
    event_types.dedup();
    SearchRequest {
        query,
        within_id: optional_str(args, "within_id"),
        event_types,
        n_hits: optional_u64(args, "n_hits").map_or(DEFAULT_N_HITS, |n| n as u32),
        harness: optional_str(args, "harness"),
        source: optional_str(args, "source"),
    }
}

pub async fn run(
    ctx: &Context,
    args: &Map<String, Value>,
    deadline: Instant,
) -> Result<Success, ToolError> {
    let request = canonical(args);
    let deadline_ms = ctx.config.tools.search_deadline_ms;
    let db_error = |e| ToolError::from_db(e, deadline_ms);
    let sla = &ctx.config.sla;
    let mut warnings = Vec::new();

    let scope = match request.within_id.as_deref() {
        None => Scope::All,
        Some(text) => match Id::parse(text) {
            Ok(Id::Session { session }) => Scope::Session { session },
            Ok(Id::Turn { session, turn }) => match u32::try_from(turn) {
                Ok(ordinal) => Scope::Turn { session, ordinal },
                Err(_) => {
                    return Err(ToolError::NotFound {
                        kind: "turn",
                        id: text.to_owned(),
                    });
                }
            },
            Ok(Id::Event { .. }) | Err(IdError::Unknown(ids::IdKind::Event)) => {
                return Err(ToolError::invalid(
                    "within_id",
                    "within_id accepts session and turn IDs, not event IDs",
                ));
            }
            Err(IdError::Unknown(kind)) => {
                return Err(ToolError::NotFound {
                    kind: kind.as_str(),
                    id: text.to_owned(),
                });
            }
            Err(IdError::Malformed) => {
                return Err(ToolError::InvalidId {
                    field: "within_id".into(),
                });
            }
        },
    };

    let mut terms = query_terms(&request.query);
    let max_terms = ctx.config.tools.max_query_terms;
    if terms.len() > max_terms {
        warnings.push(format!(
            "the query has {} distinct terms; only the first {max_terms} were used",
            terms.len()
        ));
        terms.truncate(max_terms);
    }
    let sla_target_ms = match scope {
        Scope::Turn { .. } => sla.search_within_turn,
        Scope::Session { .. } => sla.search_within_session,
        Scope::All => global_target(sla, ctx.stats.documents()),
    };
    if terms.is_empty() {
        scope_exists(ctx, &scope, request.within_id.as_deref(), deadline).await?;
        warnings.push(
            "the query has no searchable terms (words of at least two letters or digits)".into(),
        );
        return Ok(success(request, Vec::new(), false, warnings, sla_target_ms));
    }

    let kinds: Vec<u8> = request
        .event_types
        .iter()
        .flat_map(|t| {
            let code = t.code();
            // Bit 7 marks this service's own tool traffic, searched only when configured.
            if ctx.config.tools.include_self_events {
                vec![code, code | 0x80]
            } else {
                vec![code]
            }
        })
        .collect();
    let mut scope_sql = String::new();
    let (mut session_param, mut turn_param) = (0u64, 0u32);
    match scope {
        Scope::All => {}
        Scope::Session { session } => {
            scope_sql.push_str(SCOPE_SESSION);
            session_param = session;
        }
        Scope::Turn { session, ordinal } => {
            scope_sql.push_str(SCOPE_TURN);
            session_param = session;
            turn_param = ordinal;
        }
    }
    if request.harness.is_some() {
        let _ = write!(scope_sql, " {FILTER_HARNESS}");
    }
    if request.source.is_some() {
        let _ = write!(scope_sql, " {FILTER_SOURCE}");
    }
    let hashes: Vec<u64> = terms.iter().map(|t| term_hash(t)).collect();
    let stats = ctx
        .stats
        .for_terms(&ctx.db, &hashes, deadline)
        .await
        .map_err(db_error)?;
    let shape = if hashes.len() == 1 {
        ScoreShape::Single
    } else {
        ScoreShape::Summed
    };
    let sql = shape.sql(&scope_sql);
    let scored: Vec<Scored> = ctx
        .db
        .read("search_score", &sql)
        .param("terms", &hashes)
        .param("idfs", &stats.idfs)
        .param("avgdl", stats.average_length)
        .param("kinds", &kinds)
        .param("k1", ctx.config.bm25.k1)
        .param("b", ctx.config.bm25.b)
        .param("limit", request.n_hits + 1)
        .param("s", session_param)
        .param("t", turn_param)
        .param("harness", request.harness.as_deref().unwrap_or(""))
        .param("source", request.source.as_deref().unwrap_or(""))
        .fetch_all(&ctx.db, deadline)
        .await
        .map_err(db_error)?;
    let truncated = scored.len() > request.n_hits as usize;
    let scored = &scored[..scored.len().min(request.n_hits as usize)];
    if scored.is_empty() {
        scope_exists(ctx, &scope, request.within_id.as_deref(), deadline).await?;
        return Ok(success(request, Vec::new(), false, warnings, sla_target_ms));
    }

    let sessions: Vec<u64> = unique(scored.iter().map(|s| s.sess));
    let events: Vec<u64> = unique(scored.iter().map(|s| s.doc));
    let turns: Vec<(u64, u32)> = unique(scored.iter().map(|s| (s.sess, s.turn_ordinal)));
    let details: Vec<Detail> = ctx
        .db
        .read("search_details", DETAILS_SQL)
        .param("sessions", &sessions)
        .param("events", &events)
        .param("turns", &turns)
        .param("text_bytes", SNIPPET_TEXT_BYTES)
        .fetch_all(&ctx.db, deadline)
        .await
        .map_err(db_error)?;
    let mut event_rows: HashMap<(u64, u64), &Detail> = HashMap::new();
    let mut turn_rows: HashMap<(u64, u32), &Detail> = HashMap::new();
    let mut session_rows: HashMap<u64, &Detail> = HashMap::new();
    for row in &details {
        match row.part {
            1 => {
                event_rows.insert((row.session_key, row.key), row);
            }
            2 => {
                turn_rows.insert((row.session_key, row.a), row);
            }
            _ => {
                session_rows.insert(row.session_key, row);
            }
        }
    }
    let top = scored[0].score.max(f64::MIN_POSITIVE);
    let term_set: HashSet<String> = terms.into_iter().collect();
    let snippet_chars = ctx.config.tools.snippet_chars;
    let mut hits = Vec::with_capacity(scored.len());
    for doc in scored {
        // A document retracted between the two statements simply drops out.
        let Some(event) = event_rows.get(&(doc.sess, doc.doc)) else {
            continue;
        };
        let (turn, session) = (
            turn_rows.get(&(doc.sess, event.b)),
            session_rows.get(&doc.sess),
        );
        let (Some(turn), Some(session)) = (turn, session) else {
            continue;
        };
        let event_id = ids::event_id(doc.sess, doc.doc);
        let turn_id = ids::turn_id(doc.sess, turn.a as u64);
        let session_id = ids::session_id(doc.sess);
        let (text, cut) = super::snippet::snippet(&event.s1, &term_set, snippet_chars);
        hits.push(Hit {
            rank: hits.len() as u32 + 1,
            score: round4(doc.score / top),
            id: event_id.clone(),
            event: HitEvent {
                id: event_id.clone(),
                event_type: EventType::from_code(event.c as u8).unwrap_or(EventType::Unknown),
                timestamp: format_ts(event.t1),
                ordinal: event.a,
                terminal: turn.t1 as u64 == doc.doc,
            },
            turn: HitTurn {
                id: turn_id.clone(),
                ordinal: turn.a,
                completed: turn.flag,
                event_count: turn.b,
            },
            session: SessionBrief {
                id: session_id.clone(),
                title: session.s1.clone(),
                source: session.s3.clone(),
                harness: session.s2.clone(),
                started_at: format_ts(session.t1),
                updated_at: format_ts(session.t2),
                completed: session.flag,
            },
            snippet: Snippet {
                text,
                truncated: cut || event.s1.len() as u32 >= SNIPPET_TEXT_BYTES,
            },
            open: OpenRefs {
                event_id,
                turn_id,
                session_id,
            },
        });
    }
    Ok(success(request, hits, truncated, warnings, sla_target_ms))
}

/// Fails with `not_found` when a scoped search names a session or turn that does not exist.
async fn scope_exists(
    ctx: &Context,
    scope: &Scope,
    within_id: Option<&str>,
    deadline: Instant,
) -> Result<(), ToolError> {
    let (session, ordinal, kind) = match *scope {
        Scope::All => return Ok(()),
        Scope::Session { session } => (session, 1, "session"),
        Scope::Turn { session, ordinal } => (session, ordinal, "turn"),
    };
    let deadline_ms = ctx.config.tools.search_deadline_ms;
    let count: Option<u64> = ctx
        .db
        .read("search_scope", SCOPE_EXISTS_SQL)
        .param("s", session)
        .param("t", ordinal)
        .fetch_optional(&ctx.db, deadline)
        .await
        .map_err(|e| ToolError::from_db(e, deadline_ms))?;
    if count.unwrap_or(0) == 0 {
        return Err(ToolError::NotFound {
            kind,
            id: within_id.unwrap_or_default().to_owned(),
        });
    }
    Ok(())
}

fn success(
    request: SearchRequest,
    hits: Vec<Hit>,
    truncated: bool,
    warnings: Vec<String>,
    sla_target_ms: u64,
) -> Success {
    let data = SearchData {
        result_count: hits.len() as u32,
        limit: request.n_hits,
        truncated,
        results: hits,
    };
    let text = super::render::search(&request, &data);
    Success::new(
        SCHEMA_VERSION,
        &request,
        &data,
        warnings,
        sla_target_ms,
        text,
    )
}

/// The spec's global-search target for a corpus of `docs` searchable documents.
fn global_target(sla: &crate::config::SlaConfig, docs: u64) -> u64 {
    match docs {
        0..=100_000 => sla.search_100k,
        100_001..=500_000 => sla.search_500k,
        _ => sla.search_1m,
    }
}

fn unique<T: Ord>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = values.collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}
