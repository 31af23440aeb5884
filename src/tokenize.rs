//! The one tokenizer, used identically at ingest (index terms) and at query time.
//!
//! Text is split into runs of word characters (Unicode letters, digits, `_`). A run is folded to
//! lower case with diacritics removed (`Überprüfung` → `uberprufung`, so `cafe` finds `café`),
//! and kept when it is 2–64 characters long. Identifiers also yield their parts
//! (`run_migration` → `run_migration`, `run`, `migration`; `parseHttpBody` → `parsehttpbody`,
//! `parse`, `http`, `body`), so a search for a word finds it inside code. Han and kana have no
//! spaces between words, so their runs become overlapping character bigrams (`数据库` → `数据`,
//! `据库`), the scheme CJK search engines use; a lone character stays a unigram.
//!
//! Terms are stored as 64-bit XXH3 hashes (ClickHouse's `xxh3(term)` gives the same value).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Shortest and longest kept term, in characters.
const MIN_TERM_CHARS: usize = 2;
const MAX_TERM_CHARS: usize = 64;

/// A term and where it came from in the original text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub term: String,
    pub span: Range<usize>,
}

/// The index terms of one document.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DocTerms {
    /// Distinct term hashes.
    pub terms: Vec<u64>,
    /// Occurrences of each term, parallel to `terms` (saturating at `u16::MAX`).
    pub tfs: Vec<u16>,
    /// Tokens in the document (saturating at `u16::MAX`), BM25's document length.
    pub doc_len: u16,
}

/// The stable 64-bit hash under which a term is indexed.
pub fn term_hash(term: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(term.as_bytes())
}

/// Calls `emit(term, span)` for every token of `text`, in order.
pub fn for_each_token(text: &str, mut emit: impl FnMut(&str, Range<usize>)) {
    let mut scratch = String::new();
    // The current run of word characters: where it starts and whether it is CJK.
    let mut run: Option<(usize, bool)> = None;
    let mut previous_cjk: Option<(usize, char)> = None;
    for (at, c) in text.char_indices() {
        let cjk = is_cjk(c);
        let word = cjk || c.is_alphanumeric() || c == '_';
        if let Some((start, run_is_cjk)) = run {
            if word && cjk == run_is_cjk {
                if let (true, Some((prev_at, prev))) = (cjk, previous_cjk) {
                    let mut bigram = String::with_capacity(8);
                    bigram.push(prev);
                    bigram.push(c);
                    emit(&bigram, prev_at..at + c.len_utf8());
                    previous_cjk = Some((at, c));
                }
                continue;
            }
            end_run(text, start..at, run_is_cjk, &mut scratch, &mut emit);
            run = None;
        }
        if word {
            run = Some((at, cjk));
            previous_cjk = cjk.then_some((at, c));
        }
    }
    if let Some((start, run_is_cjk)) = run {
        end_run(text, start..text.len(), run_is_cjk, &mut scratch, &mut emit);
    }
}

/// Emits what a finished run still owes: a word and its parts, or a lone CJK character (longer
/// CJK runs emitted their bigrams as they went).
fn end_run(
    text: &str,
    span: Range<usize>,
    cjk: bool,
    scratch: &mut String,
    emit: &mut impl FnMut(&str, Range<usize>),
) {
    let run = &text[span.clone()];
    if !cjk {
        emit_word(run, span.start, scratch, emit);
        return;
    }
    let mut chars = run.chars();
    if let (Some(_), None) = (chars.next(), chars.next()) {
        emit(run, span);
    }
}

/// Emits a word run (folded) and, for identifiers, its parts.
fn emit_word(
    word: &str,
    offset: usize,
    scratch: &mut String,
    emit: &mut impl FnMut(&str, Range<usize>),
) {
    fold_into(word, scratch);
    let whole_len = scratch.chars().count();
    if (MIN_TERM_CHARS..=MAX_TERM_CHARS).contains(&whole_len) {
        emit(scratch, offset..offset + word.len());
    }
    if whole_len > MAX_TERM_CHARS * 4 {
        // Base64 blobs and the like: no useful parts, and splitting them costs time.
        return;
    }
    let parts = identifier_parts(word);
    if parts.len() < 2 {
        return;
    }
    let mut part_scratch = String::new();
    for part in parts {
        let piece = &word[part.clone()];
        fold_into(piece, &mut part_scratch);
        let len = part_scratch.chars().count();
        if (MIN_TERM_CHARS..=MAX_TERM_CHARS).contains(&len) {
            emit(&part_scratch, offset + part.start..offset + part.end);
        }
    }
}

/// Splits an identifier at `_`, lower→upper case changes, the end of an acronym (`HTTPServer` →
/// `HTTP`, `Server`) and letter/digit changes. Returns byte ranges within `word`.
fn identifier_parts(word: &str) -> Vec<Range<usize>> {
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Lower,
        Upper,
        Digit,
        Other,
    }
    let class = |c: char| {
        if c.is_numeric() {
            Class::Digit
        } else if c.is_uppercase() {
            Class::Upper
        } else if c.is_alphabetic() {
            Class::Lower
        } else {
            Class::Other
        }
    };
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut parts = Vec::new();
    let mut start: Option<usize> = None;
    for (i, &(at, c)) in chars.iter().enumerate() {
        if c == '_' {
            if let Some(s) = start.take() {
                parts.push(s..at);
            }
            continue;
        }
        let Some(s) = start else {
            start = Some(at);
            continue;
        };
        let prev = class(chars[i - 1].1);
        let cur = class(c);
        let next = chars.get(i + 1).map(|&(_, n)| class(n));
        let boundary = match (prev, cur) {
            (Class::Lower, Class::Upper) => true,
            (Class::Upper, Class::Upper) => next == Some(Class::Lower),
            (Class::Digit, Class::Digit) => false,
            (Class::Digit, _) | (_, Class::Digit) => true,
            _ => false,
        };
        if boundary {
            parts.push(s..at);
            start = Some(at);
        }
    }
    if let Some(s) = start {
        parts.push(s..word.len());
    }
    parts
}

/// Lower-cases and strips diacritics into `out`.
fn fold_into(word: &str, out: &mut String) {
    out.clear();
    if word.is_ascii() {
        out.push_str(word);
        out.make_ascii_lowercase();
        return;
    }
    for c in word.nfkd() {
        if is_combining_mark(c) {
            continue;
        }
        for lower in c.to_lowercase() {
            out.push(lower);
        }
    }
}

/// Han, Hiragana, Katakana and their compatibility forms: scripts written without spaces.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x31F0..=0x31FF    // Katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width Katakana
        | 0x20000..=0x2FA1F) // CJK extensions B–F and supplements
}

/// Tokens of `text` with their spans (used for snippets).
pub fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for_each_token(text, |term, span| {
        out.push(Token {
            term: term.to_owned(),
            span,
        })
    });
    out
}

/// Distinct query terms, in first-seen order.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for_each_token(query, |term, _| {
        if seen.insert(term.to_owned()) {
            out.push(term.to_owned());
        }
    });
    out
}

/// A hasher for keys that are already hashes.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// Builds [`DocTerms`], reusing its table between documents.
#[derive(Default)]
pub struct Indexer {
    counts: HashMap<u64, u32, BuildHasherDefault<PassThrough>>,
}

impl Indexer {
    /// The index terms of `text`.
    pub fn index(&mut self, text: &str) -> DocTerms {
        self.counts.clear();
        let mut len: u32 = 0;
        for_each_token(text, |term, _| {
            len += 1;
            *self.counts.entry(term_hash(term)).or_insert(0) += 1;
        });
        let mut pairs: Vec<(u64, u32)> = self.counts.iter().map(|(&t, &c)| (t, c)).collect();
        pairs.sort_unstable_by_key(|&(t, _)| t);
        DocTerms {
            terms: pairs.iter().map(|&(t, _)| t).collect(),
            tfs: pairs
                .iter()
                .map(|&(_, c)| c.min(u16::MAX as u32) as u16)
                .collect(),
            doc_len: len.min(u16::MAX as u32) as u16,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        tokens(text).into_iter().map(|t| t.term).collect()
    }

    #[test]
    fn test_ascii_words_and_lengths() {
        assert_eq!(
            terms("Fix the migration, a b 42!"),
            ["fix", "the", "migration", "42"]
        );
    }

    #[test]
    fn test_identifiers_yield_parts() {
        assert_eq!(
            terms("run_migration"),
            ["run_migration", "run", "migration"]
        );
        assert_eq!(
            terms("parseHTTPResponse"),
            ["parsehttpresponse", "parse", "http", "response"]
        );
        assert_eq!(terms("src/main.rs"), ["src", "main", "rs"]);
        assert_eq!(terms("utf8"), ["utf8", "utf"]);
    }

    #[test]
    fn test_accents_fold() {
        assert_eq!(
            terms("Café Überprüfung migração"),
            ["cafe", "uberprufung", "migracao"]
        );
        assert_eq!(query_terms("cafe"), query_terms("CAFÉ"));
    }

    #[test]
    fn test_cjk_bigrams() {
        assert_eq!(
            terms("数据库迁移失败"),
            ["数据", "据库", "库迁", "迁移", "移失", "失败"]
        );
        assert_eq!(terms("修复 数据库"), ["修复", "数据", "据库"]);
        assert_eq!(
            terms("データベースの移行"),
            [
                "デー", "ータ", "タベ", "ベー", "ース", "スの", "の移", "移行"
            ]
        );
        assert_eq!(terms("字"), ["字"]);
        // Mixed runs split at script changes.
        assert_eq!(
            terms("ClickHouse数据库"),
            ["clickhouse", "click", "house", "数据", "据库"]
        );
    }

    #[test]
    fn test_query_and_index_agree() {
        let text = "The 数据库迁移 failed: run_migration() returned Überprüfung error";
        let doc = Indexer::default().index(text);
        for term in query_terms("迁移 RUN_MIGRATION uberprufung") {
            assert!(doc.terms.contains(&term_hash(&term)), "{term}");
        }
    }

    #[test]
    fn test_spans_point_at_the_source() {
        let text = "héllo wörld_x";
        for token in tokens(text) {
            assert!(text.get(token.span.clone()).is_some());
        }
    }

    #[test]
    fn test_doc_terms_are_distinct_and_counted() {
        let doc = Indexer::default().index("cargo test cargo build cargo");
        assert_eq!(doc.doc_len, 5);
        let cargo = doc
            .terms
            .iter()
            .position(|&t| t == term_hash("cargo"))
            .unwrap();
        assert_eq!(doc.tfs[cargo], 3);
        assert_eq!(doc.terms.len(), 3);
    }

    #[test]
    fn test_hash_matches_clickhouse_xxh3() {
        // SELECT xxh3('hello') in ClickHouse.
        assert_eq!(term_hash("hello"), 10760762337991515389);
    }
}
