//! `search_sessions`: BM25 over the postings index, returning handles rather than payloads.
//!
//! One query scores documents: term statistics and corpus size come from the precomputed
//! `term_df` and `corpus_stats` tables inside the same statement, and postings carry everything
//! scoring and filtering need. A second query fetches the hits' metadata and snippet text.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
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
    score: f64,
    corpus_docs: u64,
}

#[derive(Debug, clickhouse::Row, Deserialize)]
struct HitRow {
    session_key: u64,
    event_key: u64,
    event_type: u8,
    ts: i64,
    ordinal: u32,
    turn_ordinal: u32,
    text: String,
    turn_key: u64,
    turn_completed: bool,
    turn_event_count: u32,
    terminal_event_key: u64,
    title: String,
    harness: String,
    source: String,
    started_at: i64,
    updated_at: i64,
    session_completed: bool,
}

/// Scores documents. The statistics subqueries read a handful of rows from the precomputed
/// tables; `{scope}` is one of the fixed fragments below.
const SCORE_SQL: &str = "
WITH
    (SELECT (sum(docs), sum(total_len)) FROM corpus_stats) AS corpus,
    greatest(corpus.1, 1) AS n_docs,
    greatest(corpus.2 / n_docs, 1) AS avgdl,
    (SELECT (groupArray(term), groupArray(df))
       FROM (SELECT term, sum(df) AS df FROM term_df WHERE term IN {terms:Array(UInt64)} GROUP BY term HAVING df > 0)) AS dfs,
    arrayMap(d -> log(1 + (n_docs - d + 0.5) / (d + 0.5)), dfs.2) AS idfs
SELECT
    sess,
    doc,
    assumeNotNull(sum(transform(term, dfs.1, idfs, 0.) * tf * ({k1:Float64} + 1)
        / (tf + {k1:Float64} * (1 - {b:Float64} + {b:Float64} * doc_len / avgdl)))) AS score,
    toUInt64(assumeNotNull(any(n_docs))) AS corpus_docs
FROM postings
WHERE term IN {terms:Array(UInt64)} AND kind IN {kinds:Array(UInt8)} {scope}
GROUP BY sess, doc
ORDER BY score DESC, bitShiftRight(doc, 20) DESC, sess ASC, doc ASC
LIMIT {limit:UInt32}";

const SCOPE_SESSION: &str = "AND sess = {s:UInt64}";
const SCOPE_TURN: &str = "AND sess = {s:UInt64} AND doc IN (SELECT event_key FROM events WHERE session_key = {s:UInt64} AND turn_ordinal = {t:UInt32})";
const FILTER_HARNESS: &str =
    "AND sess IN (SELECT session_key FROM sessions FINAL WHERE harness = {harness:String})";
const FILTER_SOURCE: &str =
    "AND sess IN (SELECT session_key FROM sessions FINAL WHERE source = {source:String})";

/// Metadata and text of the hits, their turns and their sessions.
const HITS_SQL: &str = "
SELECT
    e.session_key AS session_key, e.event_key AS event_key, toUInt8(e.event_type) AS event_type, e.ts AS ts,
    e.ordinal AS ordinal, e.turn_ordinal AS turn_ordinal, e.text AS text,
    t.turn_key AS turn_key, t.completed AS turn_completed, t.event_count AS turn_event_count,
    t.terminal_event_key AS terminal_event_key,
    s.title AS title, s.harness AS harness, s.source AS source, s.started_at AS started_at,
    s.updated_at AS updated_at, s.completed AS session_completed
FROM (SELECT session_key, event_key, event_type, ts, ordinal, turn_ordinal, text FROM events
      WHERE session_key IN {sessions:Array(UInt64)} AND event_key IN {events:Array(UInt64)}) AS e
LEFT JOIN (SELECT session_key, ordinal, turn_key, completed, event_count, terminal_event_key FROM turns FINAL
      WHERE session_key IN {sessions:Array(UInt64)}) AS t ON t.session_key = e.session_key AND t.ordinal = e.turn_ordinal
LEFT JOIN (SELECT session_key, title, harness, source, started_at, updated_at, completed FROM sessions FINAL
      WHERE session_key IN {sessions:Array(UInt64)}) AS s ON s.session_key = e.session_key";

const SESSION_EXISTS_SQL: &str = "SELECT count() FROM sessions WHERE session_key = {s:UInt64}";
const TURN_ORDINAL_SQL: &str = "SELECT ordinal FROM turns FINAL WHERE session_key = {s:UInt64} AND turn_key = {t:UInt64} LIMIT 1";

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
            Ok(Id::Session { session }) => {
                let exists: Option<u64> = ctx
                    .db
                    .read("search_scope_session", SESSION_EXISTS_SQL)
                    .param("s", session)
                    .fetch_optional(&ctx.db, deadline)
                    .await
                    .map_err(db_error)?;
                if exists.unwrap_or(0) == 0 {
                    return Err(ToolError::NotFound {
                        kind: "session",
                        id: text.to_owned(),
                    });
                }
                Scope::Session { session }
            }
            Ok(Id::Turn { session, turn }) => {
                let ordinal: Option<u32> = ctx
                    .db
                    .read("search_scope_turn", TURN_ORDINAL_SQL)
                    .param("s", session)
                    .param("t", turn)
                    .fetch_optional(&ctx.db, deadline)
                    .await
                    .map_err(db_error)?;
                let ordinal = ordinal.ok_or_else(|| ToolError::NotFound {
                    kind: "turn",
                    id: text.to_owned(),
                })?;
                Scope::Turn { session, ordinal }
            }
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
        Scope::All => global_target(sla, ctx.corpus_docs.load(Ordering::Relaxed)),
    };
    if terms.is_empty() {
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
    let sql = SCORE_SQL.replace("{scope}", &scope_sql);
    let scored: Vec<Scored> = ctx
        .db
        .read("search_score", &sql)
        .param("terms", &hashes)
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
    if let Some(first) = scored.first() {
        ctx.corpus_docs.store(first.corpus_docs, Ordering::Relaxed);
    }
    let truncated = scored.len() > request.n_hits as usize;
    let scored = &scored[..scored.len().min(request.n_hits as usize)];
    if scored.is_empty() {
        return Ok(success(request, Vec::new(), false, warnings, sla_target_ms));
    }

    let sessions: Vec<u64> = unique(scored.iter().map(|s| s.sess));
    let events: Vec<u64> = unique(scored.iter().map(|s| s.doc));
    let rows: Vec<HitRow> = ctx
        .db
        .read("search_hits", HITS_SQL)
        .param("sessions", &sessions)
        .param("events", &events)
        .fetch_all(&ctx.db, deadline)
        .await
        .map_err(db_error)?;
    let by_key: HashMap<(u64, u64), &HitRow> = rows
        .iter()
        .map(|r| ((r.session_key, r.event_key), r))
        .collect();
    let top = scored[0].score.max(f64::MIN_POSITIVE);
    let term_set: HashSet<String> = terms.into_iter().collect();
    let snippet_chars = ctx.config.tools.snippet_chars;
    let mut hits = Vec::with_capacity(scored.len());
    for doc in scored {
        // A document retracted between the two queries simply drops out.
        let Some(row) = by_key.get(&(doc.sess, doc.doc)) else {
            continue;
        };
        let event_id = ids::event_id(row.session_key, row.event_key);
        let turn_id = ids::turn_id(row.session_key, row.turn_key);
        let session_id = ids::session_id(row.session_key);
        let (text, cut) = super::snippet::snippet(&row.text, &term_set, snippet_chars);
        hits.push(Hit {
            rank: hits.len() as u32 + 1,
            score: round4(doc.score / top),
            id: event_id.clone(),
            event: HitEvent {
                id: event_id.clone(),
                event_type: EventType::from_code(row.event_type).unwrap_or(EventType::Unknown),
                timestamp: format_ts(row.ts),
                ordinal: row.ordinal,
                terminal: row.terminal_event_key == row.event_key,
            },
            turn: HitTurn {
                id: turn_id.clone(),
                ordinal: row.turn_ordinal,
                completed: row.turn_completed,
                event_count: row.turn_event_count,
            },
            session: SessionBrief {
                id: session_id.clone(),
                title: row.title.clone(),
                source: row.source.clone(),
                harness: row.harness.clone(),
                started_at: format_ts(row.started_at),
                updated_at: format_ts(row.updated_at),
                completed: row.session_completed,
            },
            snippet: Snippet {
                text,
                truncated: cut,
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

fn unique(values: impl Iterator<Item = u64>) -> Vec<u64> {
    let mut out: Vec<u64> = values.collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}
