//! English for the tokenizer: a light stem under which a plain word's inflections meet, and the
//! function words a question says around what it asks for.
//!
//! The stem is a key, not a word: `release`, `releases`, `released` and `releasing` all give
//! `releas`; `fix`, `fixes`, `fixed`, `fixing` give `fix`. Only the plural `-s`/`-es`, `-ed` and
//! `-ing` come off (no derivations: `configuration` stays apart from `configure`), which keeps
//! the conflations few and predictable. Words of three letters or fewer are their own key.

/// Shortest word an ending comes off.
const MIN_STEMMED_CHARS: usize = 4;
/// Shortest stem an ending may leave (`thing` is not `th` + `-ing`).
const MIN_STEM_CHARS: usize = 3;

/// Marks a stem as a term of its own: `~redirect`, the stem `redirects` and `redirected` share,
/// is not the word `redirect` (no token holds a `~`), so a search can weigh a word as written
/// above its other forms.
pub(crate) const STEM_MARK: char = '~';

/// Writes the marked stem of an inflected `word` (lower-case ASCII letters) into `out`
/// (`releases` → `~releas`; `release` and `redirect` write nothing): the term the index holds
/// beside an inflected word. Returns whether it wrote.
pub(crate) fn stem_into(word: &str, out: &mut String) -> bool {
    match stem_of(word) {
        Some(Stem {
            stem,
            inflected: true,
        }) => {
            out.clear();
            out.push(STEM_MARK);
            out.push_str(&stem);
            true
        }
        _ => false,
    }
}

/// A word's light stem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stem {
    /// The stem, which may be the word itself (always for three letters).
    pub stem: String,
    /// Whether an ending came off (`releases`, not `release`): only an inflected word's stem is
    /// indexed, a word in its base form being found as itself.
    pub inflected: bool,
}

/// The light stem of `word` (lower-case ASCII letters); `None` for the words without one
/// (shorter than three letters, function words, anything but lower-case ASCII letters).
pub(crate) fn stem_of(word: &str) -> Option<Stem> {
    let b = word.as_bytes();
    let n = b.len();
    if n < MIN_STEM_CHARS || !b.iter().all(u8::is_ascii_lowercase) || is_function_word(word) {
        return None;
    }
    if n < MIN_STEMMED_CHARS {
        return Some(Stem {
            stem: word.to_owned(),
            inflected: false,
        });
    }
    let ends = |suffix: &str| word.ends_with(suffix);
    let stem_ok = |end: usize| end >= MIN_STEM_CHARS && b[..end].iter().any(|&c| is_vowel(c));
    // One ending comes off: a plural (`-s`, with `-es` seen as `-e` + `-s`, see below), or a
    // verb's `-ing` or `-ed` (not the `-eed` of `need`, `speed`).
    let mut end = n;
    if ends("s") && !ends("ss") && !ends("us") && !ends("is") {
        end -= 1;
    } else if ends("ing") && stem_ok(n - 3) {
        end -= 3;
    } else if ends("ed") && !ends("eed") && stem_ok(n - 2) {
        end -= 2;
    }
    let inflected = end < n;
    // A final `e` goes, so `fixes` (`fixe`), `fix` and `fixed` meet, and `release`, `releases`
    // and `released` meet at `releas`.
    if end > MIN_STEM_CHARS && b[end - 1] == b'e' {
        end -= 1;
    }
    // A doubled final consonant is single (`stopped`, `running`), as `l`, `s` and `z` stay
    // (`called`, `passed`).
    if end > MIN_STEM_CHARS
        && b[end - 1] == b[end - 2]
        && !is_vowel(b[end - 1])
        && !b"lsz".contains(&b[end - 1])
    {
        end -= 1;
    }
    let mut stem = word[..end].to_owned();
    // A final consonant + `y` is `i`: `dependency` and `dependencies` meet at `dependenci`.
    if end >= MIN_STEM_CHARS && b[end - 1] == b'y' && !is_vowel(b[end - 2]) {
        stem.pop();
        stem.push('i');
    }
    Some(Stem { stem, inflected })
}

fn is_vowel(c: u8) -> bool {
    b"aeiou".contains(&c)
}

/// English function words: what a question says around what it asks for. They are left out
/// of a query that asks for anything else, and have no stem.
pub(crate) fn is_function_word(term: &str) -> bool {
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

    fn stem(word: &str) -> String {
        stem_of(word).map_or_else(|| word.to_owned(), |s| s.stem)
    }

    #[test]
    fn test_inflections_meet_at_one_stem() {
        let families: &[&[&str]] = &[
            &["redirect", "redirects", "redirected", "redirecting"],
            &["release", "releases", "released", "releasing"],
            &["fix", "fixes", "fixed", "fixing"],
            &["stop", "stops", "stopped", "stopping"],
            &["run", "runs", "running"],
            &["pass", "passes", "passed", "passing"],
            &["cache", "caches", "cached", "caching"],
            &["dependency", "dependencies"],
            &["query", "queries", "queried"],
            &["need", "needs", "needed"],
            &["status", "statuses"],
            &["timeout", "timeouts"],
            &["call", "calls", "called", "calling"],
        ];
        for family in families {
            let stems: Vec<String> = family.iter().map(|w| stem(w)).collect();
            assert!(
                stems.windows(2).all(|w| w[0] == w[1]),
                "{family:?}: {stems:?}"
            );
        }
    }

    #[test]
    fn test_what_is_left_alone() {
        // Short words, words an ending would leave without a vowel or too short, `-ss`, `-us`,
        // `-is`, function words, and anything but lower-case ASCII letters.
        for word in [
            "use",
            "thing",
            "string",
            "bring",
            "class",
            "status",
            "analysis",
            "those",
            "there",
            "v1",
            "run_migration",
            "Redirects",
            "café",
            "redirect",
        ] {
            let mut out = String::from("unchanged");
            assert!(!stem_into(word, &mut out), "{word}");
            assert_eq!(out, "unchanged");
        }
        let base = |stem: &str| {
            Some(Stem {
                stem: stem.to_owned(),
                inflected: false,
            })
        };
        assert_eq!(stem_of("fix"), base("fix"));
        assert_eq!(stem_of("is"), None);
        assert_eq!(stem_of("release"), base("releas"));
        assert!(stem_of("released").unwrap().inflected);
        let mut out = String::new();
        assert!(stem_into("releases", &mut out));
        assert_eq!(out, "~releas");
        assert_eq!(stem("configuration"), "configuration");
    }

    #[test]
    fn test_function_words_sorted() {
        assert!(FUNCTION_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_function_word("the") && !is_function_word("redirect"));
    }
}
