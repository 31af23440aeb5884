//! How a question becomes weighted query terms: English function words set aside, and
//! inflections and common abbreviations of each plain word added at a lower weight. Weights
//! scale each term's IDF, so BM25 and the impact tiers' bounds see them alike; the index is
//! untouched. (The parts of a compound or identifier count in full beside the whole: a
//! document holding the whole also holds its parts, so it ranks above one with parts only, and
//! weighing parts less measured worse on every kind of question in `moraine-mcp eval`.)

use crate::tokenize::for_each_token;

/// Weight of another form of a word (`redirects` for `redirect`) or of its usual synonym.
const VARIANT_WEIGHT: f64 = 0.6;
/// Shortest word whose inflections are tried.
const MIN_INFLECTED_CHARS: usize = 3;

/// A query term and how much it counts.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct QueryTerm {
    pub term: String,
    pub weight: f64,
    /// Written in the query (not a variant this module added).
    pub written: bool,
    /// The compounds or identifiers of the query this term is a part of (`12` of `1.12.3`):
    /// such a part is never a function word left out, and gets no variants.
    pub part_of: Vec<String>,
}

/// The weighted terms of `query`, at most `max_terms` of them: written terms first (function
/// words left out unless nothing else is asked), then their variants. Returns the terms and
/// how many written terms were left out for the bound.
pub(super) fn weighted_terms(query: &str, max_terms: usize) -> (Vec<QueryTerm>, usize) {
    let mut tokens: Vec<(String, std::ops::Range<usize>)> = Vec::new();
    for_each_token(query, |term, span| {
        if !tokens.iter().any(|(t, _)| t == term) {
            tokens.push((term.to_owned(), span));
        }
    });
    let wholes = |i: usize| -> Vec<String> {
        let span = &tokens[i].1;
        tokens
            .iter()
            .enumerate()
            .filter(|(j, (_, other))| {
                *j != i
                    && other.start <= span.start
                    && span.end <= other.end
                    && other.len() > span.len()
            })
            .map(|(_, (term, _))| term.clone())
            .collect()
    };
    let part_of: Vec<Vec<String>> = (0..tokens.len()).map(wholes).collect();
    let parts: Vec<bool> = part_of.iter().map(|w| !w.is_empty()).collect();
    let content = tokens
        .iter()
        .zip(&parts)
        .any(|((term, _), part)| !*part && !is_function_word(term));
    let mut written: Vec<QueryTerm> = tokens
        .iter()
        .zip(part_of)
        .filter(|((term, _), wholes)| !content || !wholes.is_empty() || !is_function_word(term))
        .map(|((term, _), wholes)| QueryTerm {
            term: term.clone(),
            weight: 1.0,
            written: true,
            part_of: wholes,
        })
        .collect();
    let cut = written.len().saturating_sub(max_terms);
    written.truncate(max_terms);
    let mut variants: Vec<QueryTerm> = Vec::new();
    for word in written
        .iter()
        .filter(|t| t.part_of.is_empty() && !is_function_word(&t.term))
    {
        for form in variants_of(&word.term) {
            let known = written.iter().chain(&variants).any(|t| t.term == form);
            if !known {
                variants.push(QueryTerm {
                    term: form,
                    weight: VARIANT_WEIGHT,
                    written: false,
                    part_of: Vec::new(),
                });
            }
        }
    }
    variants.truncate(max_terms.saturating_sub(written.len()));
    written.extend(variants);
    (written, cut)
}

/// Other forms of a plain English word: singular and plural, and the stem of an `-ed`/`-ing`
/// form; and the usual long or short form of a common abbreviation.
fn variants_of(word: &str) -> Vec<String> {
    let mut out: Vec<String> = SYNONYMS
        .iter()
        .filter_map(|(a, b)| {
            if *a == word {
                Some((*b).to_owned())
            } else if *b == word {
                Some((*a).to_owned())
            } else {
                None
            }
        })
        .collect();
    if word.len() < MIN_INFLECTED_CHARS || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return out;
    }
    let sibilant = |w: &str| SIBILANT_ENDINGS.iter().any(|e| w.ends_with(e));
    if let Some(stem) = word.strip_suffix("ies") {
        out.push(format!("{stem}y"));
    } else if let Some(stem) = word.strip_suffix("es").filter(|s| sibilant(s)) {
        out.push(stem.to_owned());
    } else if let Some(stem) = word
        .strip_suffix('s')
        .filter(|s| !s.ends_with('s') && !s.ends_with('u') && !s.ends_with('i'))
    {
        out.push(stem.to_owned());
    } else if let Some(stem) = word.strip_suffix("ing").filter(|s| s.len() >= 3) {
        out.push(undouble(stem));
    } else if let Some(stem) = word.strip_suffix("ed").filter(|s| s.len() >= 3) {
        out.push(undouble(stem));
    } else if let Some(stem) = word
        .strip_suffix('y')
        .filter(|s| !s.ends_with(['a', 'e', 'o', 'u']))
    {
        out.push(format!("{stem}ies"));
    } else if sibilant(word) {
        out.push(format!("{word}es"));
    } else {
        out.push(format!("{word}s"));
    }
    out.retain(|form| form.len() >= 2 && form != word);
    out
}

/// Endings whose plural takes `-es`.
const SIBILANT_ENDINGS: [&str; 5] = ["s", "x", "z", "ch", "sh"];

/// `stopp` → `stop`, `runn` → `run`: the doubled consonant of `stopped`, `running`.
fn undouble(stem: &str) -> String {
    let bytes = stem.as_bytes();
    let n = bytes.len();
    if n >= 3 && bytes[n - 1] == bytes[n - 2] && !b"aeioulsz".contains(&bytes[n - 1]) {
        stem[..n - 1].to_owned()
    } else {
        stem.to_owned()
    }
}

/// Abbreviations agents and people use for the same thing, each pair both ways.
const SYNONYMS: &[(&str, &str)] = &[
    ("js", "javascript"),
    ("ts", "typescript"),
    ("py", "python"),
    ("db", "database"),
    ("k8s", "kubernetes"),
    ("auth", "authentication"),
    ("config", "configuration"),
    ("repo", "repository"),
    ("env", "environment"),
    ("deps", "dependencies"),
    ("dep", "dependency"),
    ("dir", "directory"),
    ("perf", "performance"),
    ("msg", "message"),
    ("err", "error"),
    ("pr", "pull"),
    ("ci", "pipeline"),
    ("hash", "checksum"),
    ("timeout", "timed"),
];

/// English function words: what a question says around what it asks for.
fn is_function_word(term: &str) -> bool {
    FUNCTION_WORDS.binary_search(&term).is_ok()
}

/// Sorted, for [`is_function_word`].
const FUNCTION_WORDS: &[&str] = &[
    "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could",
    "did", "do", "does", "doing", "done", "down", "during", "each", "either", "else", "ever",
    "every", "few", "for", "from", "further", "get", "got", "had", "has", "have", "having", "he",
    "her", "here", "hers", "him", "his", "how", "if", "in", "into", "is", "it", "its", "itself",
    "just", "last", "let", "me", "might", "more", "most", "much", "must", "my", "no", "nor", "not",
    "now", "of", "off", "on", "once", "one", "only", "or", "other", "our", "ours", "out", "over",
    "own", "same", "shall", "she", "should", "so", "some", "such", "than", "that", "the", "their",
    "theirs", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too",
    "under", "until", "up", "us", "very", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(query: &str) -> Vec<(String, f64)> {
        weighted_terms(query, 32)
            .0
            .into_iter()
            .map(|t| (t.term, t.weight))
            .collect()
    }

    fn wholes_of(query: &str, term: &str) -> Vec<String> {
        let (terms, _) = weighted_terms(query, 32);
        terms.into_iter().find(|t| t.term == term).unwrap().part_of
    }

    #[test]
    fn test_function_words_sorted_and_left_out_unless_nothing_else_is_asked() {
        assert!(FUNCTION_WORDS.windows(2).all(|w| w[0] < w[1]));
        let asked = terms("how did we fix the login redirect?");
        let words: Vec<&str> = asked.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            words,
            ["fix", "login", "redirect", "fixes", "logins", "redirects"]
        );
        assert_eq!(
            terms("what is it")
                .iter()
                .map(|(t, _)| t.as_str())
                .collect::<Vec<_>>(),
            ["what", "is", "it"]
        );
    }

    #[test]
    fn test_compound_parts_know_their_wholes_and_get_no_variants() {
        assert_eq!(wholes_of("lefthook 1.12.3", "12"), ["1.12.3"]);
        assert!(wholes_of("lefthook 1.12.3", "1.12.3").is_empty());
        assert_eq!(
            wholes_of("rust_v1.example.ci", "rust"),
            ["rust_v1", "rust_v1.example.ci"]
        );
        let asked = terms("run_migration failed");
        assert!(asked.contains(&("run_migration".into(), 1.0)));
        assert!(asked.contains(&("fail".into(), VARIANT_WEIGHT)));
        assert!(!asked.iter().any(|(t, _)| t == "migrations"));
    }

    #[test]
    fn test_inflections_and_abbreviations() {
        assert_eq!(variants_of("redirects"), ["redirect"]);
        assert_eq!(variants_of("redirect"), ["redirects"]);
        assert_eq!(variants_of("dependencies"), ["deps", "dependency"]);
        assert_eq!(variants_of("fixes"), ["fix"]);
        assert_eq!(variants_of("stopped"), ["stop"]);
        assert_eq!(variants_of("crashing"), ["crash"]);
        assert_eq!(variants_of("status"), ["statuses"]);
        assert_eq!(variants_of("js"), ["javascript"]);
        assert!(variants_of("javascript").contains(&"js".to_owned()));
        assert!(variants_of("v1").is_empty());
        let (bounded, cut) = weighted_terms("alpha beta gamma delta", 3);
        assert_eq!(cut, 1);
        assert_eq!(bounded.len(), 3);
    }
}
