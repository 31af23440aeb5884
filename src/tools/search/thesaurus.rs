//! A thesaurus of coding talk: groups of expressions that mean the same thing there (`sign in`,
//! `login`; `sluggish`, `slow`), so a question asked in other words than its session used
//! still reaches the session's words.
//!
//! An expression matches a question when its words appear there in a row, compared by their
//! light stems (`crashed on launch` matches `crash on launch`). The question then also asks for
//! the group's other expressions of one word or compound (`sign-in`, `oom`), at a lower weight
//! (see [`super::query`]). Expressions of several words are matched but not asked for: a
//! search holds no phrases, and their words alone are mostly common ones (`log output` would
//! ask for `output`), which measured worse in `moraine-mcp eval`. The groups live in
//! `thesaurus.txt`, one per line (`a | b | c`); they are read once.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::tokenize::{Form, for_each_token, is_function_word, stem_of};

/// The groups, one per line, expressions separated by `|`; `#` starts a comment line.
const SOURCE: &str = include_str!("thesaurus.txt");

/// Most words in one expression.
const MAX_EXPRESSION_WORDS: usize = 6;

static THESAURUS: LazyLock<Thesaurus> = LazyLock::new(|| Thesaurus::parse(SOURCE));

/// The groups, ready to match.
#[derive(Debug, Default)]
struct Thesaurus {
    /// Each expression's word keys and its group, listed under its first key.
    by_first: HashMap<String, Vec<(Vec<String>, usize)>>,
    /// Each group's terms: its expressions of one word or compound, as the index holds them.
    groups: Vec<Vec<String>>,
}

impl Thesaurus {
    fn parse(source: &str) -> Self {
        let mut thesaurus = Self::default();
        for line in source.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let expressions: Vec<Vec<String>> = line
                .split('|')
                .map(keys)
                .filter(|keys| (1..=MAX_EXPRESSION_WORDS).contains(&keys.len()))
                .collect();
            let terms: Vec<String> = line.split('|').filter_map(index_term).collect();
            // A group asks only for its words and compounds: one of phrases alone asks nothing.
            if expressions.len() < 2 || terms.is_empty() {
                continue;
            }
            let group = thesaurus.groups.len();
            for keys in expressions {
                thesaurus
                    .by_first
                    .entry(keys[0].clone())
                    .or_default()
                    .push((keys, group));
            }
            thesaurus.groups.push(terms);
        }
        thesaurus
    }

    /// The terms of the groups of every expression found in `text`, in the order found,
    /// without repeats.
    fn related(&self, text: &str) -> Vec<String> {
        let words = keys(text);
        let mut out: Vec<String> = Vec::new();
        for at in 0..words.len() {
            let Some(candidates) = self.by_first.get(&words[at]) else {
                continue;
            };
            for (expression, group) in candidates {
                if !words[at..].starts_with(expression) {
                    continue;
                }
                for term in &self.groups[*group] {
                    if !out.contains(term) {
                        out.push(term.clone());
                    }
                }
            }
        }
        out
    }
}

/// The terms of `question`'s expressions' groups in the thesaurus (see the module's doc);
/// the question's own words among them are the caller's to skip.
pub(super) fn related_terms(question: &str) -> Vec<String> {
    THESAURUS.related(question)
}

/// The words of `text` as matching keys: runs of ASCII letters, digits and `_` (so an
/// identifier is one word and never matches plain words), folded to lower case, each a plain
/// word's light stem where it has one.
fn keys(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(|w| {
            let w = w.to_ascii_lowercase();
            match stem_of(&w) {
                Some(stem) => stem.stem,
                None => w,
            }
        })
        .collect()
}

/// The term the index holds for an expression of one word or compound (`Sign-in` →
/// `sign-in`), if it is one and not a function word.
fn index_term(expression: &str) -> Option<String> {
    let expression = expression.trim();
    let mut whole = None;
    for_each_token(expression, |term, span, form| {
        if form == Form::Written && span == (0..expression.len()) && !is_function_word(term) {
            whole = Some(term.to_owned());
        }
    });
    whole
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Thesaurus {
        Thesaurus::parse(
            "# failures\n\
             crash on launch | crash on startup | segfault\n\
             sign in | Login | log in | sign-in\n\
             \n\
             lonely\n\
             sluggish | slow | takes forever\n",
        )
    }

    #[test]
    fn test_a_phrase_found_in_a_row_asks_for_its_groups_words_and_compounds() {
        let t = sample();
        assert_eq!(t.related("Why did the app crash on launch?"), ["segfault"]);
        // Inflections meet under their stem.
        assert_eq!(t.related("it crashed on launching"), ["segfault"]);
        assert_eq!(
            t.related("bouncing at the sign-in page"),
            ["login", "sign-in"]
        );
        // Words not in a row, or inside an identifier, match nothing.
        assert!(t.related("crash later on launch").is_empty());
        assert!(t.related("sign_in_page").is_empty());
    }

    #[test]
    fn test_several_expressions_add_their_groups_once_in_order() {
        let t = sample();
        assert_eq!(
            t.related("sluggish login, slow login"),
            ["sluggish", "slow", "login", "sign-in"]
        );
        // A line of one expression is no group.
        assert_eq!(t.groups.len(), 3);
    }

    #[test]
    fn test_the_shipped_thesaurus_parses_into_groups_that_ask_for_terms() {
        assert!(THESAURUS.groups.len() > 500);
        assert!(THESAURUS.groups.iter().all(|g| !g.is_empty()));
    }
}
