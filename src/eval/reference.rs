//! The reference: plain BM25 (k1 = 1.2, b = 0.75) over the events the default search covers,
//! computed here from their text rather than by the service.
//!
//! Text is lower-cased and split on every character that is not a letter or a digit; nothing
//! else (no stemming, no identifier parts, no length limits). Events are ranked by score, then
//! newer first, then by event ID, as the service orders ties.

use std::collections::HashMap;

use serde::Deserialize;

use super::metrics::Hit;
use crate::db::Db;
use crate::ids;
use crate::vocab::EventType;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// English function words: articles, pronouns, prepositions, conjunctions, auxiliaries and
/// question words, which the second reference leaves out of queries.
const FUNCTION_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "either",
    "even",
    "ever",
    "every",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "least",
    "less",
    "let",
    "like",
    "may",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "my",
    "myself",
    "neither",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "shall",
    "she",
    "should",
    "since",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "though",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "upon",
    "us",
    "very",
    "was",
    "we",
    "were",
    "what",
    "whatever",
    "when",
    "where",
    "whether",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "within",
    "without",
    "would",
    "yet",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "s",
    "t",
    "d",
    "ll",
    "re",
    "ve",
    "m",
    "don",
    "didn",
    "doesn",
    "isn",
    "wasn",
    "weren",
    "aren",
    "won",
    "wouldn",
    "couldn",
    "shouldn",
    "hasn",
    "haven",
    "hadn",
    "can't",
    "cannot",
];

/// The reference's tokens of a text: lower-cased runs of letters and digits.
pub(crate) fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
}

/// The distinct terms of a query, in order, without function words when asked.
pub(crate) fn query_terms(query: &str, without_function_words: bool) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for token in tokens(query) {
        if without_function_words && FUNCTION_WORDS.contains(&token.as_str()) {
            continue;
        }
        if !terms.contains(&token) {
            terms.push(token);
        }
    }
    terms
}

/// One searchable event as the reference sees it.
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    pub session_key: u64,
    pub turn: u32,
    pub event_key: u64,
    /// Milliseconds since the epoch.
    pub ts: i64,
    pub text: String,
}

#[derive(Debug, Deserialize, clickhouse::Row)]
struct EventText {
    session_key: u64,
    turn_ordinal: u32,
    event_key: u64,
    ts: i64,
    text: String,
}

/// Every event a default `search_sessions` covers: the default event types, searchable, and
/// not the service's own tool traffic unless the configuration searches it.
pub(crate) async fn searchable_events(db: &Db, include_self: bool) -> anyhow::Result<Vec<Doc>> {
    let types: Vec<u8> = EventType::DEFAULT_SEARCH.iter().map(|t| t.code()).collect();
    let rows: Vec<EventText> = db
        .read(
            "eval_reference_events",
            "SELECT session_key, turn_ordinal, event_key, toUnixTimestamp64Milli(ts) AS ts, text \
             FROM events \
             WHERE searchable AND toUInt8(event_type) IN {types:Array(UInt8)} \
               AND (NOT self_tool OR {include_self:Bool})",
        )
        .param("types", types)
        .param("include_self", include_self)
        .fetch_all(db, db.default_deadline())
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| Doc {
            session_key: r.session_key,
            turn: r.turn_ordinal,
            event_key: r.event_key,
            ts: r.ts,
            text: r.text,
        })
        .collect())
}

/// A BM25 index over documents, in memory.
pub(crate) struct Index {
    docs: Vec<Doc>,
    /// The documents' event IDs, for ties.
    ids: Vec<String>,
    lengths: Vec<u32>,
    average_length: f64,
    /// Term → (document, term frequency).
    postings: HashMap<String, Vec<(u32, u32)>>,
}

impl Index {
    pub(crate) fn new(docs: Vec<Doc>) -> Self {
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(docs.len());
        for (at, doc) in docs.iter().enumerate() {
            let mut counts: HashMap<String, u32> = HashMap::new();
            let mut length = 0;
            for token in tokens(&doc.text) {
                *counts.entry(token).or_default() += 1;
                length += 1;
            }
            lengths.push(length);
            for (term, tf) in counts {
                postings.entry(term).or_default().push((at as u32, tf));
            }
        }
        let total: u64 = lengths.iter().map(|&l| u64::from(l)).sum();
        let average_length = total as f64 / docs.len().max(1) as f64;
        let ids = docs
            .iter()
            .map(|d| ids::event_id(d.session_key, d.event_key))
            .collect();
        Self {
            docs,
            ids,
            lengths,
            average_length,
            postings,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.docs.len()
    }

    /// Inverse document frequency, BM25's non-negative form.
    fn idf(&self, df: usize) -> f64 {
        let (n, df) = (self.docs.len() as f64, df as f64);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// The `depth` best events for `query`, as hits in rank order.
    pub(crate) fn search(
        &self,
        query: &str,
        without_function_words: bool,
        depth: usize,
    ) -> Vec<Hit> {
        let scores = self.scores(&query_terms(query, without_function_words));
        let mut ranked: Vec<(u32, f64)> = scores.into_iter().collect();
        ranked.sort_by(|&(a, sa), &(b, sb)| {
            let (da, db) = (&self.docs[a as usize], &self.docs[b as usize]);
            sb.total_cmp(&sa)
                .then(db.ts.cmp(&da.ts))
                .then_with(|| self.ids[a as usize].cmp(&self.ids[b as usize]))
        });
        ranked
            .into_iter()
            .take(depth)
            .map(|(doc, _)| {
                let doc = &self.docs[doc as usize];
                Hit {
                    session: ids::session_id(doc.session_key),
                    turn: doc.turn,
                }
            })
            .collect()
    }

    /// Every matching document's BM25 score for the distinct `terms`.
    fn scores(&self, terms: &[String]) -> HashMap<u32, f64> {
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for term in terms {
            let Some(list) = self.postings.get(term) else {
                continue;
            };
            let idf = self.idf(list.len());
            for &(doc, tf) in list {
                let tf = f64::from(tf);
                let length = f64::from(self.lengths[doc as usize]);
                let norm = K1 * (1.0 - B + B * length / self.average_length.max(1e-9));
                *scores.entry(doc).or_default() += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        scores
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(session_key: u64, event_key: u64, ts: i64, text: &str) -> Doc {
        Doc {
            session_key,
            turn: 1,
            event_key,
            ts,
            text: text.to_owned(),
        }
    }

    #[test]
    fn test_tokens_are_lowercased_runs_of_letters_and_digits() {
        let t: Vec<String> =
            tokens("Upgraded lefthook v1.12.3; ERR_TOO_MANY_REDIRECTS at src/parse.rs:88")
                .collect();
        assert_eq!(
            t,
            [
                "upgraded",
                "lefthook",
                "v1",
                "12",
                "3",
                "err",
                "too",
                "many",
                "redirects",
                "at",
                "src",
                "parse",
                "rs",
                "88"
            ]
        );
    }

    #[test]
    fn test_function_words_leave_the_query_only_when_asked() {
        let q = "How did we fix the login redirect loop, and the redirect?";
        assert_eq!(
            query_terms(q, false),
            [
                "how", "did", "we", "fix", "the", "login", "redirect", "loop", "and"
            ]
        );
        assert_eq!(query_terms(q, true), ["fix", "login", "redirect", "loop"]);
    }

    #[test]
    fn test_bm25_ranks_by_rarity_frequency_and_length_then_time() {
        let index = Index::new(vec![
            doc(1, 10, 100, "the cookie and the session"),
            doc(2, 20, 100, "the redirect loop"),
            doc(
                3,
                30,
                100,
                "the redirect loop after the redirect of the session cookie",
            ),
            doc(4, 40, 200, "the redirect loop"),
            doc(5, 50, 100, "nothing to see"),
        ]);
        assert_eq!(index.len(), 5);
        let sessions: Vec<String> = index
            .search("redirect loop", false, 10)
            .into_iter()
            .map(|h| h.session)
            .collect();
        // Short documents first (4 is newer than 2), then the long one; others do not match.
        assert_eq!(
            sessions,
            [ids::session_id(4), ids::session_id(2), ids::session_id(3)]
        );
        // "the" is in four of five documents: it scores, but barely.
        let hits = index.search("the session", false, 2);
        assert_eq!(hits[0].session, ids::session_id(1));
        assert!(index.search("absent words", false, 10).is_empty());
        assert!(index.search("the", true, 10).is_empty());
    }

    #[test]
    fn test_bm25_scores_match_the_formula() {
        let index = Index::new(vec![doc(1, 1, 0, "a b"), doc(2, 2, 0, "a a a c")]);
        // N = 2, average length 3. "b": df 1, idf = ln(1 + 1.5 / 1.5) = ln 2; in document 0
        // (length 2) once: ln 2 × 2.2 / (1 + 1.2 × (0.25 + 0.75 × 2/3)).
        let scores = index.scores(&["b".to_owned()]);
        let expected = 2f64.ln() * 2.2 / (1.0 + 1.2 * (0.25 + 0.5));
        assert!((scores[&0] - expected).abs() < 1e-12, "{scores:?}");
        assert!(!scores.contains_key(&1));
        // "a": df 2, idf = ln(1 + 0.5 / 2.5); three times in document 1 (length 4).
        let scores = index.scores(&["a".to_owned()]);
        let idf = (1.0f64 + 0.5 / 2.5).ln();
        let expected = idf * 3.0 * 2.2 / (3.0 + 1.2 * (0.25 + 0.75 * 4.0 / 3.0));
        assert!((scores[&1] - expected).abs() < 1e-12, "{scores:?}");
    }
}
