//! `search_sessions`: BM25 over the postings index, returning handles rather than payloads.
//!
//! A search runs as its algorithm reads: the [`Scope`] it may look in, the [`statistics`] of its
//! terms (document frequencies and corpus size from the precomputed `term_df` and
//! `corpus_stats`, through a short-lived cache), [`score`] (statements over the postings, which
//! carry everything scoring needs; a global search reads only the impact [`tiers`] that can
//! reach its top k), the hits' [`details`] (their events, turns and sessions
//! in a second statement) and [`assemble`] (snippets, normalised scores, IDs).

mod meaning;
mod query;
mod render;
mod session_score;
mod snippet;
mod spread;
mod sql;
mod thesaurus;
mod tiers;
pub(crate) mod wire;

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use jsonschema::error::ValidationErrorKind;
use serde::Deserialize;
use serde_json::{Value, json};

use super::context::{
    Answer, Budget, Context, Tool, VISIBLE_SESSION_KEY, Visibility, optional_integer,
};
use super::envelope::{Performance, ToolError};
use super::project::{self, Project, ProjectMatch};
use super::querylog;
use super::schema::{self, DATETIME_PATTERN, ID_PATTERN, InputRules};
use super::stats::QueryStats;
use crate::auth::Caller;
use crate::config::{Config, SlaConfig};
use crate::ids::{self, Id, IdError, IdKind};
use crate::text::{db_time, format_ts, rfc3339_ms};
use crate::tokenize::{query_terms, term_hash};
use crate::vocab::{EventType, SELF_TRAFFIC_BIT};
use sql::{Detail, EventDetail, ScoreShape, Scored, SessionDetail, TurnDetail};
use wire::{Hit, HitEvent, HitTurn, OpenRefs, SearchData, SearchRequest, SessionBrief, Snippet};

const MAX_QUERY_CHARS: u64 = 4096;
/// Most entries of `event_types`: every type a few times over (repeats are harmless, and a
/// list longer than this is no filter anyone means).
const MAX_EVENT_TYPES: u64 = 32;
const MAX_N_HITS: u64 = 50;
const DEFAULT_N_HITS: u32 = 10;
/// Snippets look at most this much of an event's text.
const SNIPPET_TEXT_BYTES: u32 = snippet::SCAN_BYTES as u32;

/// A search's time window, in epoch milliseconds: sessions updated at or after `from` and
/// started before `to` (open-ended where the request names no bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Window {
    from: i64,
    to: i64,
}

impl Window {
    fn of(request: &SearchRequest) -> Result<Self, ToolError> {
        let bound = |field: &str, text: &Option<String>, open: i64| match text {
            None => Ok(open),
            Some(text) => rfc3339_ms(text).ok_or_else(|| {
                ToolError::invalid(field, format!("{field} is not a valid RFC 3339 datetime"))
            }),
        };
        let window = Self {
            from: bound("start_datetime", &request.start_datetime, i64::MIN)?,
            to: bound("end_datetime", &request.end_datetime, i64::MAX)?,
        };
        if window.to <= window.from {
            return Err(ToolError::invalid(
                "end_datetime",
                "end_datetime must be later than start_datetime",
            ));
        }
        Ok(window)
    }
}

/// The `search_sessions` tool.
pub(crate) struct SearchSessions;

/// The arguments, as the published schema accepted them.
#[derive(Debug, Deserialize)]
pub(crate) struct Args {
    query: String,
    #[serde(default)]
    within_id: Option<String>,
    #[serde(default)]
    event_types: Option<Vec<EventType>>,
    #[serde(default, deserialize_with = "optional_integer")]
    n_hits: Option<u32>,
    #[serde(default)]
    harness: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    start_datetime: Option<String>,
    #[serde(default)]
    end_datetime: Option<String>,
}

impl Args {
    /// The canonical request: trimmed query, defaults applied, event types deduplicated in
    /// canonical order.
    fn canonical(self) -> SearchRequest {
        let mut event_types = self
            .event_types
            .unwrap_or_else(|| EventType::DEFAULT_SEARCH.to_vec());
        event_types.sort();
        event_types.dedup();
        SearchRequest {
            query: self.query.trim().to_owned(),
            within_id: self.within_id,
            event_types,
            n_hits: self.n_hits.unwrap_or(DEFAULT_N_HITS),
            harness: self.harness,
            source: self.source,
            project: self.project,
            start_datetime: self.start_datetime,
            end_datetime: self.end_datetime,
        }
    }
}

impl Tool for SearchSessions {
    const NAME: &'static str = "search_sessions";
    const TITLE: &'static str = "Search sessions";
    const DESCRIPTION: &'static str = "Find events in past agent sessions by words (BM25). Returns ranked handles with short \
             snippets and the event, turn and session IDs to pass to `open`; never full payloads. \
             Searching all sessions spreads the hits over sessions, each session's best hit \
             before its others; pass a session ID as `within_id` for all of that session's hits. \
             Default event types: user_input, assistant_response, tool_response.";
    const SCHEMA_VERSION: &'static str = "moraine.mcp.search_sessions.v1";

    type Args = Args;
    type Request = SearchRequest;
    type Data = SearchData;

    fn input_schema() -> Value {
        let types: Vec<&str> = EventType::SEARCHABLE.iter().map(|t| t.as_str()).collect();
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["query"],
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_QUERY_CHARS,
                    "pattern": "\\S",
                    "description": "Words to look for (BM25 over words; quotes and operators are not special). Leading and trailing whitespace is ignored."
                },
                "within_id": {
                    "type": ["string", "null"],
                    "pattern": ID_PATTERN,
                    "description": "Search only this session or turn (an ID returned by this server). Event IDs are not accepted."
                },
                "event_types": {
                    "type": ["array", "null"],
                    "minItems": 1,
                    "maxItems": MAX_EVENT_TYPES,
                    "items": { "type": "string", "enum": types },
                    "description": "Event types to search. Default: user_input, assistant_response, tool_response."
                },
                "n_hits": {
                    "type": ["integer", "null"],
                    "minimum": 1,
                    "maximum": MAX_N_HITS,
                    "description": "Hits to return, 1–50. Default 10."
                },
                "harness": schema::harness_filter(),
                "source": schema::name_filter("source name"),
                "project": project::filter_schema(),
                "start_datetime": {
                    "type": ["string", "null"],
                    "pattern": DATETIME_PATTERN,
                    "description": "Only sessions active at or after this time (updated at or after it), RFC 3339 with Z or an offset."
                },
                "end_datetime": {
                    "type": ["string", "null"],
                    "pattern": DATETIME_PATTERN,
                    "description": "Only sessions started before this time, RFC 3339 with Z or an offset."
                },
            }
        })
    }

    fn input_rules() -> InputRules {
        InputRules {
            id_fields: &["within_id"],
            special: |field, error| {
                // A name outside the vocabulary (or `unknown`) in the list is its own error.
                let in_list = error.instance_path().as_str() != "/event_types";
                (field == "event_types"
                    && in_list
                    && matches!(error.kind(), ValidationErrorKind::Enum { .. }))
                .then(|| {
                    let value = error.instance();
                    ToolError::UnsupportedEventType {
                        value: value
                            .as_str()
                            .map_or_else(|| value.to_string(), str::to_owned),
                    }
                })
            },
            message: |field, kind| {
                Some(match field {
                    "query" if matches!(kind, ValidationErrorKind::MaxLength { .. }) => {
                        format!("query must be at most {MAX_QUERY_CHARS} characters")
                    }
                    "query" => "query must be a non-empty string".into(),
                    "n_hits" => format!("n_hits must be an integer between 1 and {MAX_N_HITS}"),
                    "event_types" if matches!(kind, ValidationErrorKind::MinItems { .. }) => {
                        "event_types must contain at least one event type".into()
                    }
                    "event_types" if matches!(kind, ValidationErrorKind::MaxItems { .. }) => {
                        format!("event_types must hold at most {MAX_EVENT_TYPES} event types")
                    }
                    "event_types" => "event_types must be an array of event type names".into(),
                    "within_id" => "within_id must be a session or turn ID string".into(),
                    "harness" | "source" => schema::name_filter_message(field),
                    "project" => project::filter_message(),
                    "start_datetime" | "end_datetime" => format!(
                        "{field} must be an RFC 3339 datetime with Z or an offset, e.g. 2026-04-30T09:00:00Z"
                    ),
                    _ => return None,
                })
            },
        }
    }

    fn budget(config: &Config) -> Budget {
        Budget {
            deadline_ms: config.tools.search_deadline_ms,
            fallback_sla_ms: config.sla.search_100k,
        }
    }

    async fn run(
        ctx: &Context,
        visible: &Visibility,
        args: Args,
        deadline: Instant,
    ) -> Result<Answer<Self>, ToolError> {
        let request = args.canonical();
        let scope = Scope::of(request.within_id.as_deref())?;
        // A window that cannot hold a session is refused before anything is read.
        Window::of(&request)?;
        let sla_target_ms = scope.sla_target(&ctx.config.sla, ctx.stats.documents());
        let mut warnings = Vec::new();
        let max_terms = ctx.config.tools.max_query_terms;
        let (weighted, cut) =
            query::weighted_terms(&request.query, max_terms, ctx.config.bm25.related_weight);
        if cut > 0 {
            warnings.push(format!(
                "the query has {} distinct terms; only the first {max_terms} were used",
                cut + max_terms
            ));
        }
        let terms: Vec<String> = weighted.iter().map(|t| t.term.clone()).collect();
        if terms.is_empty() {
            scope
                .ensure_exists(ctx, visible, request.within_id.as_deref(), deadline)
                .await?;
            warnings.push(
                "the query has no searchable terms (words of at least two letters or digits)"
                    .into(),
            );
            return Ok(answer(request, Vec::new(), false, warnings, sla_target_ms));
        }
        let hashes: Vec<u64> = terms.iter().map(|t| term_hash(t)).collect();
        // The statistics of the types searched: events a search leaves out weigh nothing.
        let types: Vec<u8> = request.event_types.iter().map(|t| t.code()).collect();
        let statistics = ctx
            .stats
            .for_terms(&ctx.db, &hashes, &types, deadline)
            .await?;
        let (hashes, statistics) = weigh(&weighted, hashes, statistics);
        let (scored, truncated) = score(
            ctx,
            visible,
            &request,
            &scope,
            &hashes,
            &statistics,
            deadline,
        )
        .await?;
        if scored.is_empty() {
            scope
                .ensure_exists(ctx, visible, request.within_id.as_deref(), deadline)
                .await?;
            return Ok(answer(request, Vec::new(), false, warnings, sla_target_ms));
        }
        let details = details(ctx, &scored, deadline).await?;
        // Snippets are CPU work (tokenizing up to 64 KiB per hit): off the async runtime, so
        // the call's deadline and every other request keep running.
        let snippet_chars = ctx.config.tools.snippet_chars;
        let hits =
            tokio::task::spawn_blocking(move || assemble(&scored, &details, terms, snippet_chars))
                .await
                .map_err(|e| ToolError::Internal(format!("building snippets failed: {e}")))?;
        Ok(answer(request, hits, truncated, warnings, sla_target_ms))
    }

    fn render(answer: &Answer<Self>) -> String {
        render::text(&answer.request, &answer.data)
    }

    /// Every search is logged with its hits (in the background; never fails the call).
    fn answered(ctx: &Context, answer: &Answer<Self>, performance: &Performance, caller: &Caller) {
        let request = &answer.request;
        let query_id = uuid::Uuid::new_v4().to_string();
        let ts = (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64;
        let hits = answer
            .data
            .results
            .iter()
            .map(|hit| querylog::HitRow {
                ts,
                query_id: query_id.clone(),
                rank: hit.rank as u8,
                score: hit.score as f32,
                event_id: hit.id.clone(),
                session_id: hit.session.id.clone(),
            })
            .collect();
        ctx.query_log.record(querylog::Entry {
            query: querylog::QueryRow {
                ts,
                query_id,
                query: request.query.clone(),
                within_id: request.within_id.clone().unwrap_or_default(),
                event_types: request
                    .event_types
                    .iter()
                    .map(|t| t.as_str().to_owned())
                    .collect(),
                harness: request.harness.clone().unwrap_or_default(),
                source: request.source.clone().unwrap_or_default(),
                n_hits: request.n_hits as u8,
                result_count: answer.data.result_count as u8,
                truncated: answer.data.truncated,
                terms: query_terms(&request.query).len() as u16,
                corpus_docs: ctx.stats.documents(),
                elapsed_ms: performance.elapsed_ms as u32,
                met_sla: performance.met_sla,
                client: caller.name.clone(),
            },
            hits,
        });
    }
}

/// Where a search looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    All,
    Session { session: u64 },
    Turn { session: u64, ordinal: u32 },
}

impl Scope {
    /// The scope named by `within_id`: a session or turn of this service.
    fn of(within_id: Option<&str>) -> Result<Self, ToolError> {
        let Some(text) = within_id else {
            return Ok(Self::All);
        };
        let not_found = |kind: IdKind| ToolError::NotFound {
            kind: kind.as_str(),
            id: text.to_owned(),
        };
        match Id::parse(text) {
            Ok(Id::Session { session }) => Ok(Self::Session { session }),
            Ok(Id::Turn { session, turn }) => u32::try_from(turn)
                .map(|ordinal| Self::Turn { session, ordinal })
                .map_err(|_| not_found(IdKind::Turn)),
            Ok(Id::Event { .. }) | Err(IdError::Unknown(IdKind::Event)) => Err(ToolError::invalid(
                "within_id",
                "within_id accepts session and turn IDs, not event IDs",
            )),
            Err(IdError::Unknown(kind)) => Err(not_found(kind)),
            Err(IdError::Malformed) => Err(ToolError::InvalidId {
                field: "within_id".into(),
            }),
        }
    }

    /// The spec's target for a search in this scope over a corpus of `docs` documents.
    fn sla_target(self, sla: &SlaConfig, docs: u64) -> u64 {
        match self {
            Self::Turn { .. } => sla.search_within_turn,
            Self::Session { .. } => sla.search_within_session,
            Self::All => match docs {
                0..=100_000 => sla.search_100k,
                100_001..=500_000 => sla.search_500k,
                _ => sla.search_1m,
            },
        }
    }

    /// The scope's fragment of the scoring statement and its parameters (session, turn).
    fn sql(self) -> (&'static str, u64, u32) {
        match self {
            Self::All => ("", 0, 0),
            Self::Session { session } => (sql::SCOPE_SESSION, session, 0),
            Self::Turn { session, ordinal } => (sql::SCOPE_TURN, session, ordinal),
        }
    }

    /// Fails with `not_found` (naming `within_id`) when a scoped search names a session or turn
    /// that does not exist.
    async fn ensure_exists(
        self,
        ctx: &Context,
        visible: &Visibility,
        within_id: Option<&str>,
        deadline: Instant,
    ) -> Result<(), ToolError> {
        let (session, ordinal, kind) = match self {
            Self::All => return Ok(()),
            Self::Session { session } => (session, 1, IdKind::Session),
            Self::Turn { session, ordinal } => (session, ordinal, IdKind::Turn),
        };
        let statement = crate::db::splice(
            sql::SCOPE_EXISTS_SQL,
            &[("visible", visible.filter(VISIBLE_SESSION_KEY))],
        );
        let count: Option<u64> = ctx
            .db
            .read("search_scope", &statement)
            .param("s", session)
            .param("t", ordinal)
            .param("visible", visible.sources())
            .fetch_optional(&ctx.db, deadline)
            .await?;
        if count.unwrap_or(0) == 0 {
            return Err(ToolError::NotFound {
                kind: kind.as_str(),
                id: within_id.unwrap_or_default().to_owned(),
            });
        }
        Ok(())
    }
}

/// The terms to score with: each term's IDF scaled by its weight, and variants the corpus does
/// not hold left out (they would only loosen the impact tiers' bounds).
fn weigh(
    weighted: &[query::QueryTerm],
    hashes: Vec<u64>,
    statistics: QueryStats,
) -> (Vec<u64>, QueryStats) {
    let mut kept = Vec::with_capacity(hashes.len());
    let mut stats = QueryStats {
        idfs: Vec::with_capacity(hashes.len()),
        dfs: Vec::with_capacity(hashes.len()),
        average_length: statistics.average_length,
    };
    for (i, term) in weighted.iter().enumerate() {
        if !term.written && statistics.dfs[i] == 0 {
            continue;
        }
        kept.push(hashes[i]);
        stats.idfs.push(statistics.idfs[i] * term.weight);
        stats.dfs.push(statistics.dfs[i]);
    }
    (kept, stats)
}

/// The top `n_hits` documents by BM25, and whether more matched.
async fn score(
    ctx: &Context,
    visible: &Visibility,
    request: &SearchRequest,
    scope: &Scope,
    hashes: &[u64],
    statistics: &QueryStats,
    deadline: Instant,
) -> Result<(Vec<Scored>, bool), ToolError> {
    let include_self = ctx.config.tools.include_self_events;
    let kinds: Vec<u8> = request
        .event_types
        .iter()
        .flat_map(|t| {
            let own = include_self.then_some(t.code() | SELF_TRAFFIC_BIT);
            std::iter::once(t.code()).chain(own)
        })
        .collect();
    let (scope_sql, session, turn) = scope.sql();
    let mut fragments = vec![scope_sql];
    if request.harness.is_some() {
        fragments.push(sql::FILTER_HARNESS);
    }
    if request.source.is_some() {
        fragments.push(sql::FILTER_SOURCE);
    }
    if request.project.is_some() {
        fragments.push(sql::FILTER_PROJECT);
    }
    if request.start_datetime.is_some() || request.end_datetime.is_some() {
        fragments.push(sql::FILTER_WINDOW);
    }
    fragments.push(visible.filter(sql::FILTER_VISIBLE));
    // A global page chooses among more candidates than it shows (see `spread`).
    let global = matches!(scope, Scope::All);
    let limit = if global {
        spread::candidates(request.n_hits)
    } else {
        request.n_hits + 1
    };
    let read = Read {
        limit,
        ctx,
        visible,
        request,
        hashes,
        statistics,
        kinds,
        fragments,
        session,
        turn,
        deadline,
    };
    let tools = &ctx.config.tools;
    let tiered = tools.impact_tiers
        && matches!(scope, Scope::All)
        && hashes.len() <= tools.impact_tiers_max_terms
        && statistics.dfs.iter().sum::<u64>() >= tools.impact_tiers_min_postings
        && statistics.idfs.iter().all(|idf| *idf > 0.0);
    let (mut scored, path, postings) = if tiered {
        read.by_tiers().await?
    } else {
        // A global search reads every posting of its terms (a term's postings are its
        // document frequency); a scoped one, a session's.
        let postings = matches!(scope, Scope::All).then(|| {
            let all = statistics.dfs.iter().sum();
            PostingsRead { read: all, all }
        });
        (read.postings(None).await?, ReadPath::Scoped, postings)
    };
    let metrics = ctx.db.metrics();
    metrics.observe_search_read(path.as_str());
    if let Some(PostingsRead { read, all }) = postings {
        metrics.observe_search_postings(path.as_str(), read, all);
    }
    if global {
        let asked = session_score::Asked {
            hashes,
            idfs: &statistics.idfs,
            kinds: &read.kinds,
        };
        let mut scored = session_score::weigh(ctx, &asked, scored, deadline).await?;
        let semantic = &ctx.config.semantic;
        // Meaning counts as much as the question is asked in plain words.
        let weight = semantic.weight * query::plain_share(&request.query);
        if let Some(embedder) = ctx.embedder.as_deref()
            && weight > 0.0
            && request.event_types.iter().any(|t| t.is_prose())
            && !scored.is_empty()
        {
            // Meaning only reorders: if it cannot be read, the words' order stands.
            match read
                .closest(embedder, &request.query, semantic.sessions, deadline)
                .await
            {
                Ok(Some(closest)) if !closest.is_empty() => {
                    scored = meaning::fuse(scored, &closest, weight);
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "cannot rank by meaning; ranking by words alone");
                }
            }
        }
        return Ok(spread::page(
            scored,
            request.n_hits as usize,
            tools.hits_per_session,
        ));
    }
    let truncated = scored.len() > request.n_hits as usize;
    scored.truncate(request.n_hits as usize);
    Ok((scored, truncated))
}

/// Which postings a search read (counted in `/metrics`, reported by the benchmark).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadPath {
    /// A session or turn, terms with few postings, or tiers switched off: every posting of
    /// its terms in scope.
    Scoped,
    /// Every posting of every term, after a first read showed no tier could be skipped.
    AllAfterTiers,
    /// The best tiers of each term, which alone held the top k.
    OneTierRead,
    /// The best tiers, then the tiers that can still reach the top k.
    TwoTierReads,
}

/// Every [`ReadPath`]'s name in `/metrics`.
pub(crate) const READ_PATHS: [&str; 4] = [
    ReadPath::Scoped.as_str(),
    ReadPath::AllAfterTiers.as_str(),
    ReadPath::OneTierRead.as_str(),
    ReadPath::TwoTierReads.as_str(),
];

impl ReadPath {
    const fn as_str(self) -> &'static str {
        match self {
            Self::Scoped => "all_postings",
            Self::AllAfterTiers => "tiers_then_all_postings",
            Self::OneTierRead => "one_tier_read",
            Self::TwoTierReads => "two_tier_reads",
        }
    }
}

/// How many postings a global search read, of all its terms' postings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PostingsRead {
    read: u64,
    all: u64,
}

/// One search's scoring statement, run over all postings or some tiers of them.
struct Read<'a> {
    /// Documents to score at most: the page, and one to tell whether more matched.
    limit: u32,
    ctx: &'a Context,
    visible: &'a Visibility,
    request: &'a SearchRequest,
    hashes: &'a [u64],
    statistics: &'a QueryStats,
    kinds: Vec<u8>,
    fragments: Vec<&'static str>,
    session: u64,
    turn: u32,
    deadline: Instant,
}

impl Read<'_> {
    /// The top k (`limit`) over the postings, or over the given (term, tier) pairs only.
    async fn postings(&self, tiers: Option<&[(u64, u8)]>) -> Result<Vec<Scored>, ToolError> {
        let mut fragments = self.fragments.clone();
        if tiers.is_some() {
            fragments.push(sql::FILTER_TIERS);
        }
        let statement = ScoreShape::for_terms(self.hashes.len()).sql(&fragments.join(" "));
        let bm25 = &self.ctx.config.bm25;
        // Named apart so that `/metrics` and the benchmark show what a tier read costs.
        let name = match tiers {
            Some(_) => "search_score_tiers",
            None => "search_score",
        };
        Ok(self
            .bind(self.ctx.db.read(name, &statement))?
            .param("terms", self.hashes)
            .param("idfs", &self.statistics.idfs)
            .param("avgdl", self.statistics.average_length)
            .param("k1", bm25.k1)
            .param("b", bm25.b)
            .param("limit", self.limit)
            .param("tiers", tiers.unwrap_or_default())
            .fetch_all(&self.ctx.db, self.deadline)
            .await?)
    }

    /// `query` with the parameters of the search's scope, types and filters bound.
    fn bind(&self, query: crate::db::Query) -> Result<crate::db::Query, ToolError> {
        let request = self.request;
        let project = ProjectMatch::of(request.project.as_deref());
        let window = Window::of(request)?;
        Ok(query
            .param("kinds", &self.kinds)
            .param("s", self.session)
            .param("t", self.turn)
            .param("harness", request.harness.as_deref().unwrap_or(""))
            .param("source", request.source.as_deref().unwrap_or(""))
            .param("project_prefix", &project.prefix)
            .param("project_suffix", &project.suffix)
            .param("from", db_time(window.from))
            .param("to", db_time(window.to))
            .param("visible", self.visible.sources()))
    }

    /// The exact top k, reading only the tiers that can reach it (see [`tiers`]).
    async fn by_tiers(&self) -> Result<(Vec<Scored>, ReadPath, Option<PostingsRead>), ToolError> {
        let listed: Vec<(u64, u8, u64)> = self
            .ctx
            .db
            .read("search_tiers", sql::TIERS_SQL)
            .param("terms", self.hashes)
            .fetch_all(&self.ctx.db, self.deadline)
            .await?;
        let bm25 = tiers::Bm25 {
            k1: self.ctx.config.bm25.k1,
            b: self.ctx.config.bm25.b,
            avgdl: self.statistics.average_length,
        };
        let terms: Vec<tiers::TermTiers> = self
            .hashes
            .iter()
            .zip(&self.statistics.idfs)
            .map(|(&term, &idf)| {
                let of_term: Vec<(u8, u64)> = listed
                    .iter()
                    .filter(|(t, _, _)| *t == term)
                    .map(|(_, tier, n)| (*tier, *n))
                    .collect();
                tiers::TermTiers::new(term, idf, &of_term, &bm25)
            })
            .collect();
        let first = tiers::first_read(&terms);
        let found = self.postings(Some(&first)).await?;
        let k = self.limit as usize;
        let theta = found.get(k - 1).map(|s| s.score);
        // What each read costs, in postings.
        let count = |read: &[(u64, u8)]| -> u64 {
            listed
                .iter()
                .filter(|(term, tier, _)| read.contains(&(*term, *tier)))
                .map(|(_, _, n)| n)
                .sum()
        };
        let all: u64 = listed.iter().map(|(_, _, n)| n).sum();
        let postings = |read| Some(PostingsRead { read, all });
        match tiers::final_read(&terms, theta) {
            tiers::Plan::Exhaustive => Ok((
                self.postings(None).await?,
                ReadPath::AllAfterTiers,
                postings(count(&first) + all),
            )),
            tiers::Plan::Tiers(last) if tiers::first_read_suffices(&first, &last) => {
                Ok((found, ReadPath::OneTierRead, postings(count(&first))))
            }
            tiers::Plan::Tiers(last) => {
                let read = self.postings(Some(&last)).await?;
                let both = count(&first) + count(&last);
                // Its top k all reach θ unless postings were retracted between the reads (a
                // session re-read): then only reading every posting is sure.
                if tiers::final_read_holds(&read, k, theta) {
                    Ok((read, ReadPath::TwoTierReads, postings(both)))
                } else {
                    Ok((
                        self.postings(None).await?,
                        ReadPath::AllAfterTiers,
                        postings(both + all),
                    ))
                }
            }
        }
    }
}

/// The scored documents' events, turns and sessions, by key.
#[derive(Default)]
struct Details {
    events: HashMap<(u64, u64), EventDetail>,
    turns: HashMap<(u64, u32), TurnDetail>,
    sessions: HashMap<u64, SessionDetail>,
}

async fn details(
    ctx: &Context,
    scored: &[Scored],
    deadline: Instant,
) -> Result<Details, ToolError> {
    let sessions: Vec<u64> = unique(scored.iter().map(|s| s.sess));
    let events: Vec<u64> = unique(scored.iter().map(|s| s.doc));
    let turns: Vec<(u64, u32)> = unique(scored.iter().map(|s| (s.sess, s.turn_ordinal)));
    let rows: Vec<sql::DetailRow> = ctx
        .db
        .read("search_details", sql::DETAILS_SQL)
        .param("sessions", &sessions)
        .param("events", &events)
        .param("turns", &turns)
        .param("text_bytes", SNIPPET_TEXT_BYTES)
        .fetch_all(&ctx.db, deadline)
        .await?;
    let mut details = Details::default();
    for row in rows {
        match Detail::from(row) {
            Detail::Event(e) => {
                details.events.insert((e.session, e.event), e);
            }
            Detail::Turn(t) => {
                details.turns.insert((t.session, t.ordinal), t);
            }
            Detail::Session(s) => {
                details.sessions.insert(s.session, s);
            }
        }
    }
    Ok(details)
}

/// The hits, in score order: normalised scores, snippets and the IDs to open. A document
/// retracted between the two statements simply drops out.
fn assemble(
    scored: &[Scored],
    details: &Details,
    terms: Vec<String>,
    snippet_chars: usize,
) -> Vec<Hit> {
    let top = scored
        .first()
        .map_or(1.0, |s| s.score)
        .max(f64::MIN_POSITIVE);
    let terms: HashSet<String> = terms.into_iter().collect();
    let mut hits = Vec::with_capacity(scored.len());
    for doc in scored {
        let Some(event) = details.events.get(&(doc.sess, doc.doc)) else {
            continue;
        };
        let turn = details.turns.get(&(doc.sess, event.turn_ordinal));
        let session = details.sessions.get(&doc.sess);
        let (Some(turn), Some(session)) = (turn, session) else {
            continue;
        };
        let event_id = ids::event_id(doc.sess, doc.doc);
        let turn_id = ids::turn_id(doc.sess, turn.ordinal.into());
        let session_id = ids::session_id(doc.sess);
        let (text, cut) = snippet::snippet(&event.text, &terms, snippet_chars);
        hits.push(Hit {
            rank: hits.len() as u32 + 1,
            score: round4(doc.score / top),
            id: event_id.clone(),
            event: HitEvent {
                id: event_id.clone(),
                event_type: EventType::from_code(event.event_type).unwrap_or(EventType::Unknown),
                timestamp: format_ts(event.ts),
                ordinal: event.ordinal,
                terminal: turn.terminal_event == doc.doc,
            },
            turn: HitTurn {
                id: turn_id.clone(),
                ordinal: turn.ordinal,
                completed: turn.completed,
                event_count: turn.event_count,
            },
            session: SessionBrief {
                id: session_id.clone(),
                title: session.title.clone(),
                source: session.source.clone(),
                project: Project::of(&session.cwd),
                harness: session.harness.clone(),
                started_at: format_ts(session.started_at),
                updated_at: format_ts(session.updated_at),
                completed: session.completed,
            },
            snippet: Snippet {
                text,
                truncated: cut || event.text.len() as u32 >= SNIPPET_TEXT_BYTES,
            },
            open: OpenRefs {
                event_id,
                turn_id,
                session_id,
            },
        });
    }
    hits
}

fn answer(
    request: SearchRequest,
    hits: Vec<Hit>,
    truncated: bool,
    warnings: Vec<String>,
    sla_target_ms: u64,
) -> Answer<SearchSessions> {
    let data = SearchData {
        result_count: hits.len() as u32,
        limit: request.n_hits,
        truncated,
        results: hits,
    };
    Answer {
        request,
        data,
        warnings,
        sla_target_ms,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_canonical_request_trims_applies_defaults_and_orders_types() {
        let args: Args = serde_json::from_value(json!({
            "query": "  cargo test ",
            "event_types": ["tool_response", "user_input", "user_input"],
            "n_hits": 5.0,
            "harness": "codex"
        }))
        .unwrap();
        let request = args.canonical();
        assert_eq!(request.query, "cargo test");
        assert_eq!(
            request.event_types,
            [EventType::UserInput, EventType::ToolResponse]
        );
        assert_eq!(request.n_hits, 5);
        assert_eq!(request.harness.as_deref(), Some("codex"));
        let request = serde_json::from_value::<Args>(json!({"query": "x", "within_id": null}))
            .unwrap()
            .canonical();
        assert_eq!(request.event_types, EventType::DEFAULT_SEARCH);
        assert_eq!(request.n_hits, DEFAULT_N_HITS);
        assert_eq!(request.within_id, None);
    }

    #[test]
    fn test_scopes_from_within_id() {
        assert_eq!(Scope::of(None).unwrap(), Scope::All);
        let session = ids::session_id(7);
        assert_eq!(
            Scope::of(Some(&session)).unwrap(),
            Scope::Session { session: 7 }
        );
        let turn = ids::turn_id(7, 3);
        assert_eq!(
            Scope::of(Some(&turn)).unwrap(),
            Scope::Turn {
                session: 7,
                ordinal: 3
            }
        );
        let event = ids::event_id(7, 3);
        assert!(matches!(
            Scope::of(Some(&event)),
            Err(ToolError::InvalidRequest { .. })
        ));
        assert!(matches!(
            Scope::of(Some("session:???")),
            Err(ToolError::InvalidId { .. })
        ));
        let huge_turn = ids::turn_id(7, u64::from(u32::MAX) + 1);
        assert!(matches!(
            Scope::of(Some(&huge_turn)),
            Err(ToolError::NotFound { kind: "turn", .. })
        ));
    }
}
