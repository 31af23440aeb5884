//! A thesaurus of coding talk: groups of expressions that mean the same thing there (`sign in`,
//! `login`; `sluggish`, `slow`), so a question asked in other words than its session used
//! still reaches the session's words.
//!
//! An expression matches a question when its words appear there in a row, a word of the
//! question matching an expression's word as written or as an inflection of it (`crashed on
//! launching` matches `crash on launch`; `times` does not match `timed`, nor `https` `http`).
//! The question then also asks for the group's expressions of one word or compound (`sign-in`,
//! `oom`), at a lower weight (see [`super::query`]). Expressions of several words are matched
//! but not asked for: a search holds no phrases, and their words alone are mostly common ones
//! (`log output` would ask for `output`), which measured worse in `moraine-mcp eval`. The
//! groups live in `thesaurus.txt`, one per line (`a | b | c`); they are read once.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::tokenize::{Form, STEM_MARK, for_each_token, is_function_word, stem_of};

/// The groups, one per line, expressions separated by `|`; `#` starts a comment line.
const SOURCE: &str = include_str!("thesaurus.txt");

/// Most words in one expression.
const MAX_EXPRESSION_WORDS: usize = 6;

static THESAURUS: LazyLock<Thesaurus> = LazyLock::new(|| Thesaurus::parse(SOURCE));

/// A word as matching compares it.
#[derive(Debug, Clone, PartialEq)]
struct Word {
    /// Folded to lower case, apostrophes left out (`can't` → `cant`).
    text: String,
    /// For a question's word, its light stem if it is inflected (`crashed` → `crash`); for an
    /// expression's word, its light stem if it is not (`crash`, `release` → `releas`). Equal
    /// stems match an inflection to its base form, never two inflections or two base forms to
    /// each other (`times` and `timed` share a stem, as do `http` and `https`).
    stem: Option<String>,
}

impl Word {
    /// Whether this word of a question matches `expression`'s word.
    fn matches(&self, expression: &Self) -> bool {
        self.text == expression.text || (self.stem.is_some() && self.stem == expression.stem)
    }

    /// The keys under which an expression starting with this word is found, or which a
    /// question's word looks up: its text, and its stem marked apart.
    fn keys(&self) -> impl Iterator<Item = String> + '_ {
        std::iter::once(self.text.clone())
            .chain(self.stem.iter().map(|s| format!("{STEM_MARK}{s}")))
    }
}

/// The groups, ready to match.
#[derive(Debug, Default)]
struct Thesaurus {
    /// Each expression's words and its group, listed under the keys of its first word.
    by_first: HashMap<String, Vec<(Vec<Word>, usize)>>,
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
            let mut expressions: Vec<Vec<Word>> = Vec::new();
            let mut terms: Vec<String> = Vec::new();
            for expression in line.split('|') {
                let words = words(expression, false);
                if !(1..=MAX_EXPRESSION_WORDS).contains(&words.len()) {
                    continue;
                }
                expressions.push(words);
                terms.extend(index_term(expression).filter(|t| !terms.contains(t)));
            }
            // A group asks only for its words and compounds: one of phrases alone asks nothing.
            if expressions.len() < 2 || terms.is_empty() {
                continue;
            }
            let group = thesaurus.groups.len();
            for words in expressions {
                for key in words[0].keys() {
                    thesaurus
                        .by_first
                        .entry(key)
                        .or_default()
                        .push((words.clone(), group));
                }
            }
            thesaurus.groups.push(terms);
        }
        thesaurus
    }

    /// The terms of the groups of the expressions found in `text`, in the order found, without
    /// repeats, at most `limit` of them.
    fn related(&self, text: &str, limit: usize) -> Vec<String> {
        let words = words(text, true);
        let mut out: Vec<String> = Vec::new();
        for at in 0..words.len() {
            for key in words[at].keys() {
                let Some(candidates) = self.by_first.get(&key) else {
                    continue;
                };
                for (expression, group) in candidates {
                    let found = words.len() - at >= expression.len()
                        && words[at..]
                            .iter()
                            .zip(expression)
                            .all(|(w, e)| w.matches(e));
                    if !found {
                        continue;
                    }
                    for term in &self.groups[*group] {
                        if out.len() == limit {
                            return out;
                        }
                        if !out.contains(term) {
                            out.push(term.clone());
                        }
                    }
                }
            }
        }
        out
    }
}

/// The terms of `question`'s expressions' groups in the thesaurus (see the module's doc), at
/// most `limit`; the question's own words among them are the caller's to skip.
pub(super) fn related_terms(question: &str, limit: usize) -> Vec<String> {
    THESAURUS.related(question, limit)
}

/// The words of `text`: runs of letters, digits, `_`, `.` and apostrophes, so that an
/// identifier, a file name or a version is one word and never matches plain words
/// (`sign_in_page`, `.net`, `node.js`), while a hyphen or a slash parts words (`sign-in` is
/// `sign in`). A trailing dot (a sentence's end) and apostrophes are left out.
fn words(text: &str, question: bool) -> Vec<Word> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '\'' | '\u{2019}')))
        .map(|w| {
            w.trim_end_matches('.')
                .chars()
                .filter(|c| !matches!(c, '\'' | '\u{2019}'))
                .flat_map(char::to_lowercase)
                .collect::<String>()
        })
        .filter(|w| !w.is_empty())
        .map(|text| {
            let stem = stem_of(&text)
                .filter(|stem| stem.inflected == question)
                .map(|stem| stem.stem);
            Word { text, stem }
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
             sluggish | slow | takes forever\n\
             timeout | timed\n\
             .net | dotnet\n\
             can't connect | econnrefused\n\
             pr | pull request\n",
        )
    }

    fn related(question: &str) -> Vec<String> {
        sample().related(question, 32)
    }

    #[test]
    fn test_a_phrase_found_in_a_row_asks_for_its_groups_words_and_compounds() {
        assert_eq!(related("Why did the app crash on launch?"), ["segfault"]);
        assert_eq!(
            related("bouncing at the sign-in page"),
            ["login", "sign-in"]
        );
        assert_eq!(related("I can’t connect"), ["econnrefused"]);
        assert_eq!(related("a .NET app"), ["dotnet"]);
        // Words not in a row match nothing.
        assert!(related("crash later on launch").is_empty());
    }

    #[test]
    fn test_an_inflection_matches_its_base_form_and_nothing_else() {
        assert_eq!(related("it crashed on launching"), ["segfault"]);
        assert_eq!(related("the request timed out"), ["timeout", "timed"]);
        // `times` and `timed` share a stem, but neither is the other's base form.
        assert!(related("compile times").is_empty());
    }

    #[test]
    fn test_identifiers_paths_and_other_scripts_are_not_read_as_words() {
        assert!(related("sign_in_page").is_empty());
        assert!(related("go net/http").is_empty());
        assert!(related("Prüfung der Daten").is_empty());
        assert!(related("pr.yml").is_empty());
        assert_eq!(related("open a PR."), ["pr"]);
    }

    #[test]
    fn test_several_expressions_add_their_groups_once_in_order_up_to_the_limit() {
        let t = sample();
        assert_eq!(
            t.related("sluggish login, slow login", 32),
            ["sluggish", "slow", "login", "sign-in"]
        );
        assert_eq!(
            t.related("sluggish login", 3),
            ["sluggish", "slow", "login"]
        );
        // A line of one expression is no group, nor one of phrases alone.
        assert_eq!(t.groups.len(), 7);
        assert!(Thesaurus::parse("log output | log lines").groups.is_empty());
    }

    #[test]
    fn test_every_line_of_the_shipped_thesaurus_is_a_group_that_asks_for_terms() {
        let lines: Vec<&str> = SOURCE
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        for line in &lines {
            assert!(
                line.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || " |.-_'".contains(c)),
                "{line}"
            );
            assert!(
                line.split('|')
                    .all(|e| (1..=MAX_EXPRESSION_WORDS).contains(&words(e, false).len())),
                "{line}"
            );
        }
        assert_eq!(THESAURUS.groups.len(), lines.len());
    }
}
