//! How a question becomes weighted query terms: English function words set aside, the light
//! stem of each plain word added at a lower weight, and the terms its expressions stand for in
//! the [`thesaurus`] of coding talk (`login` for `sign in`) at a lower weight still. Weights
//! scale each term's IDF, so BM25 and the impact tiers' bounds see them alike. The index holds
//! an inflected word's stem beside it (`redirects`, `~redirect`; see [`crate::tokenize`]), so
//! `redirect` asks for `~redirect` too, and `redirects` for `~redirect` and `redirect`: every
//! form is found, and the form asked for ranks first. (The parts of a compound or identifier
//! count in full beside the whole: a document holding the whole also holds its parts, so it
//! ranks above one with parts only, and weighing parts less measured worse on every kind of
//! question in `moraine-mcp eval`.)

use super::thesaurus;
use crate::tokenize::{Form, STEM_MARK, Stem, for_each_token, is_function_word, is_plain, stem_of};

/// Weight of a word's other forms (`~redirect` and `redirect` for `redirects`).
const VARIANT_WEIGHT: f64 = 0.6;

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
/// words left out unless nothing else is asked), then their other forms, then the terms
/// related to its expressions (and their other forms) at `related_weight`, none at 0. Returns
/// the terms and how many written terms were left out for the bound.
pub(super) fn weighted_terms(
    query: &str,
    max_terms: usize,
    related_weight: f64,
) -> (Vec<QueryTerm>, usize) {
    let tokens = written_tokens(query);
    let content = tokens
        .iter()
        .any(|t| t.part_of.is_empty() && !is_function_word(&t.term));
    let mut written: Vec<QueryTerm> = tokens
        .iter()
        .filter(|t| !content || !t.part_of.is_empty() || t.flag || !is_function_word(&t.term))
        .map(|t| QueryTerm {
            term: t.term.clone(),
            weight: 1.0,
            written: true,
            part_of: t.part_of.clone(),
        })
        .collect();
    let cut = written.len().saturating_sub(max_terms);
    written.truncate(max_terms);
    let room = max_terms.saturating_sub(written.len());
    let mut variants: Vec<QueryTerm> = Vec::new();
    let add = |term: String, weight: f64, variants: &mut Vec<QueryTerm>| {
        let known = written
            .iter()
            .chain(variants.iter())
            .any(|t| t.term == term);
        if !known && variants.len() < room {
            variants.push(QueryTerm {
                term,
                weight,
                written: false,
                part_of: Vec::new(),
            });
        }
    };
    for word in written
        .iter()
        .filter(|t| t.part_of.is_empty() && !is_function_word(&t.term))
    {
        let plain = tokens
            .iter()
            .find(|t| t.term == word.term)
            .is_some_and(|t| is_plain(&query[t.span.clone()]) && !t.flag);
        if plain {
            for form in other_forms(&word.term) {
                add(form, VARIANT_WEIGHT, &mut variants);
            }
        }
    }
    if related_weight > 0.0 {
        // A related word's inflections are asked through its marked stem alone: guessing its
        // base forms as well would spend the bound on terms the corpus mostly lacks.
        for term in thesaurus::related_terms(query, room) {
            let stem = marked_stem(&term);
            add(term, related_weight, &mut variants);
            if let Some(stem) = stem {
                add(stem, related_weight, &mut variants);
            }
        }
    }
    written.extend(variants);
    (written, cut)
}

/// A distinct token as the question writes it.
struct Written {
    term: String,
    span: std::ops::Range<usize>,
    /// The compounds or identifiers of the question it is a part of.
    part_of: Vec<String>,
    /// Written as a command-line flag (see [`is_flag`]).
    flag: bool,
}

/// The question's distinct written tokens, in order.
fn written_tokens(query: &str) -> Vec<Written> {
    let mut tokens: Vec<(String, std::ops::Range<usize>)> = Vec::new();
    for_each_token(query, |term, span, form| {
        if form == Form::Written && !tokens.iter().any(|(t, _)| t == term) {
            tokens.push((term.to_owned(), span));
        }
    });
    let wholes = |span: &std::ops::Range<usize>| -> Vec<String> {
        tokens
            .iter()
            .filter(|(_, other)| {
                other.start <= span.start && span.end <= other.end && other.len() > span.len()
            })
            .map(|(term, _)| term.clone())
            .collect()
    };
    tokens
        .iter()
        .map(|(term, span)| Written {
            term: term.clone(),
            part_of: wholes(span),
            flag: is_flag(query, span),
            span: span.clone(),
        })
        .collect()
}

/// How much of the question is plain words: the share of its content (its words and
/// identifiers, less function words and the parts of identifiers) written as plain words. A
/// model of meaning reads words; versions, identifiers, acronyms and flags (`1.12.3`,
/// `rfc-9728`, `AWS`, `--since`) are what words find exactly, and meaning would only blur them.
pub(super) fn plain_share(query: &str) -> f64 {
    let tokens = written_tokens(query);
    let content: Vec<&Written> = tokens
        .iter()
        .filter(|t| t.part_of.is_empty() && !is_function_word(&t.term))
        .collect();
    let plain = content
        .iter()
        .filter(|t| !t.flag && is_plain(&query[t.span.clone()]))
        .count();
    if content.is_empty() {
        0.0
    } else {
        plain as f64 / content.len() as f64
    }
}

/// Whether the word at `span` is written as a command-line flag (`--since`, `-a`): a name the
/// person gives exactly, never a function word left out (`since`) and asked for without other
/// forms. The dashes start the word: `sign-in`'s `in` is a compound's part.
fn is_flag(query: &str, span: &std::ops::Range<usize>) -> bool {
    let before = &query[..span.start];
    let undashed = before.trim_end_matches('-');
    undashed.len() < before.len()
        && undashed
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || "`'\"([{".contains(c))
}

/// The terms under which the index holds a plain word's other forms: the marked stem of its
/// inflections and, for an inflected word, the base forms its stem can stand for (`releases` →
/// `~releas`, `release`, `releas`; `dependencies` → `~dependenci`, `dependency`; variants the corpus lacks are dropped before scoring).
fn other_forms(word: &str) -> Vec<String> {
    let Some(Stem { stem, inflected }) = stem_of(word) else {
        return Vec::new();
    };
    let mut forms = vec![format!("{STEM_MARK}{stem}")];
    if inflected {
        if let Some(y) = stem.strip_suffix('i') {
            forms.push(format!("{y}y"));
        } else {
            forms.push(format!("{stem}e"));
            forms.push(stem);
        }
    }
    forms.retain(|form| form != word);
    forms
}

/// The term under which the index holds a plain word's inflections (`redirect` → `~redirect`).
fn marked_stem(word: &str) -> Option<String> {
    stem_of(word).map(|Stem { stem, .. }| format!("{STEM_MARK}{stem}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(query: &str) -> Vec<(String, f64)> {
        weighted_terms(query, 32, 0.0)
            .0
            .into_iter()
            .map(|t| (t.term, t.weight))
            .collect()
    }

    fn wholes_of(query: &str, term: &str) -> Vec<String> {
        let (terms, _) = weighted_terms(query, 32, 0.0);
        terms.into_iter().find(|t| t.term == term).unwrap().part_of
    }

    fn owned(terms: &[(&str, f64)]) -> Vec<(String, f64)> {
        terms.iter().map(|(t, w)| ((*t).to_owned(), *w)).collect()
    }

    #[test]
    fn test_the_plain_share_counts_words_against_identifiers_flags_and_acronyms() {
        assert_eq!(plain_share("which server was falling over"), 1.0);
        assert_eq!(plain_share("1.12.3"), 0.0);
        assert_eq!(plain_share("rfc-9728"), 0.0);
        assert_eq!(plain_share("the"), 0.0);
        // version, humantime, add and option against `--since`.
        assert_eq!(
            plain_share("Which version of humantime did we add for the --since option?"),
            0.8
        );
        // broke, upgraded, provider and version against `AWS` (a lone digit is no term).
        assert_eq!(
            plain_share("What broke when we upgraded the AWS provider to version 5?"),
            0.8
        );
    }

    #[test]
    fn test_function_words_left_out_unless_nothing_else_is_asked() {
        assert_eq!(
            terms("how did we fix the login redirects?"),
            owned(&[
                ("fix", 1.0),
                ("login", 1.0),
                ("redirects", 1.0),
                ("~fix", VARIANT_WEIGHT),
                ("~login", VARIANT_WEIGHT),
                ("~redirect", VARIANT_WEIGHT),
                ("redirecte", VARIANT_WEIGHT),
                ("redirect", VARIANT_WEIGHT),
            ])
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
        assert!(asked.contains(&("~fail".into(), VARIANT_WEIGHT)));
        assert!(
            !asked
                .iter()
                .any(|(t, _)| t.starts_with('~') && t.contains("migration"))
        );
        // A file name's word is a part: no other forms.
        assert_eq!(terms("releases.md").len(), 3);
    }

    #[test]
    fn test_a_flag_is_asked_for_exactly_even_when_it_is_a_function_word() {
        let asked = terms("which commits did git log --all show?");
        assert!(asked.contains(&("all".into(), 1.0)));
        assert!(!asked.iter().any(|(t, _)| t == "which" || t == "did"));
        // Short flags, and flags in backticks or quotes, alike.
        assert!(terms("ls -all output").contains(&("all".into(), 1.0)));
        assert!(terms("run it with `--all`").contains(&("all".into(), 1.0)));
        assert!(terms("the '--with' option").contains(&("with".into(), 1.0)));
        // A flag gets no other forms.
        let asked = terms("git clone --filters");
        assert!(asked.contains(&("filters".into(), 1.0)));
        assert!(!asked.iter().any(|(t, _)| t == "~filter" || t == "filter"));
        // Not flags: a dash between words, a hyphen inside a word.
        assert!(!terms("deploy - all of it").iter().any(|(t, _)| t == "all"));
        assert!(is_flag("--all", &(2..5)) && !is_flag("x--all", &(3..6)));
    }

    #[test]
    fn test_other_forms_and_their_bound() {
        assert_eq!(
            terms("Releases"),
            owned(&[
                ("releases", 1.0),
                ("~releas", VARIANT_WEIGHT),
                ("release", VARIANT_WEIGHT),
                ("releas", VARIANT_WEIGHT)
            ])
        );
        assert_eq!(
            terms("redirect"),
            owned(&[("redirect", 1.0), ("~redirect", VARIANT_WEIGHT)])
        );
        // Identifiers and acronyms are asked for exactly.
        assert_eq!(terms("ReleaseNotes RELEASES").len(), 4);
        let (bounded, cut) = weighted_terms("alpha beta gamma delta", 3, 0.0);
        assert_eq!(cut, 1);
        assert_eq!(bounded.len(), 3);
    }

    #[test]
    fn test_related_terms_come_last_at_their_weight_with_their_other_forms() {
        let asked = weighted_terms("js deps", 32, 0.3).0;
        let weight_of = |term: &str| asked.iter().find(|t| t.term == term).map(|t| t.weight);
        assert_eq!(weight_of("js"), Some(1.0));
        assert_eq!(weight_of("deps"), Some(1.0));
        assert_eq!(weight_of("javascript"), Some(0.3));
        assert_eq!(weight_of("dependencies"), Some(0.3));
        assert_eq!(weight_of("~dependenci"), Some(0.3));
        assert!(
            asked[2..]
                .iter()
                .all(|t| !t.written && t.part_of.is_empty())
        );
        // A related term written in the question keeps its written weight, once.
        let asked = weighted_terms("js javascript", 32, 0.3).0;
        assert_eq!(asked.iter().filter(|t| t.term == "javascript").count(), 1);
        assert_eq!(asked[1].weight, 1.0);
        // At weight 0, and for identifiers, none are asked.
        let asks = |query: &str, weight: f64, term: &str| {
            weighted_terms(query, 32, weight)
                .0
                .iter()
                .any(|t| t.term == term)
        };
        assert!(!asks("js deps", 0.0, "javascript"));
        assert!(!asks("js_deps", 0.3, "javascript"));
        // Related terms count against the bound after every written term and other form.
        let bounded: Vec<String> = weighted_terms("js", 3, 0.3)
            .0
            .into_iter()
            .map(|t| t.term)
            .collect();
        assert_eq!(bounded, ["js", "javascript", "~javascript"]);
        // A related word's inflections are asked through its marked stem alone.
        let asked = weighted_terms("deps", 32, 0.3).0;
        assert!(
            asked
                .iter()
                .any(|t| t.term == "dependency" && t.weight == 0.3)
        );
        assert!(!asked.iter().any(|t| t.term == "dependencye"));
    }
}
