//! The one tokenizer, used identically at ingest (index terms) and at query time.
//!
//! Text is split into runs of word characters (Unicode letters, digits, `_`). A run is folded to
//! lower case with diacritics removed (`Überprüfung` → `uberprufung`, so `cafe` finds `café`),
//! and kept when it is 2–64 characters long. Identifiers also yield their parts
//! (`run_migration` → `run_migration`, `run`, `migration`; `parseHttpBody` → `parsehttpbody`,
//! `parse`, `http`, `body`), so a search for a word finds it inside code; tokens of more than
//! eight parts (hex digests and the like) are kept whole only. Han and kana have no
//! spaces between words, so their runs become overlapping character bigrams (`数据库` → `数据`,
//! `据库`), the scheme CJK search engines use; a lone character stays a unigram. ASCII words
//! joined by single dots or hyphens also yield the compound whole (`1.12.3`, `v0.7.3`,
//! `rfc-9728`, `main.rs`), so a version or a file name is found as itself and by its parts; a
//! version written with a prefix also yields the bare version (`v1.12.3` → `1.12.3`).
//! A plain English word also yields its light stem, marked apart from words, when that differs
//! ([`english`]: `releases` → `releases`, `~releas`), so a word finds its inflections and still
//! ranks its own form first; identifiers, compounds and their parts are not stemmed, so they
//! are found exactly.
//!
//! Terms are stored as 64-bit XXH3 hashes (ClickHouse's `xxh3(term)` gives the same value).

mod english;

use std::ops::Range;

use english::stem_into;
pub(crate) use english::{STEM_MARK, Stem, is_function_word, stem_of};
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Identifiers of more parts than this are opaque tokens (hex digests, encoded data): they are
/// indexed whole, without their fragments.
const MAX_PARTS: usize = 8;

/// Most words in a compound (longer chains are lists, not names).
const MAX_COMPOUND_WORDS: usize = 8;

/// Shortest and longest kept term, in characters.
const MIN_TERM_CHARS: usize = 2;
const MAX_TERM_CHARS: usize = 64;

/// What a term is of the text it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// A word, an identifier's part or a compound, as written (folded).
    Written,
    /// The light stem of the plain word just emitted, spanning it (not counted in a document's
    /// length: it is another name for a word counted already).
    Stem,
}

/// A term and where it came from in the original text.
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub term: String,
    pub span: Range<usize>,
    pub form: Form,
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
pub(crate) fn term_hash(term: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(term.as_bytes())
}

/// Calls `emit(term, span, form)` for every token of `text`: words in order (a plain word's
/// stem right after it), and a compound (see the module's doc) after the words it joins, before
/// the next word.
pub(crate) fn for_each_token(text: &str, mut emit: impl FnMut(&str, Range<usize>, Form)) {
    let bytes = text.as_bytes();
    let char_at = |at: usize| text[at..].chars().next().expect("at a char boundary");
    let mut scratch = String::new();
    let mut stem = String::new();
    let mut compound = Compound::default();
    let mut at = 0;
    while at < bytes.len() {
        let first = bytes[at];
        if first < 0x80 && !is_word_byte(first) {
            at += 1;
            continue;
        }
        let c = if first < 0x80 {
            first as char
        } else {
            char_at(at)
        };
        if is_cjk(c) {
            // Overlapping bigrams as the run goes; a lone character is a unigram.
            let start = at;
            let mut previous: Option<(usize, char)> = None;
            while at < bytes.len() && bytes[at] >= 0x80 {
                let c = char_at(at);
                if !is_cjk(c) {
                    break;
                }
                if let Some((previous_at, previous_char)) = previous {
                    scratch.clear();
                    scratch.push(previous_char);
                    scratch.push(c);
                    emit(&scratch, previous_at..at + c.len_utf8(), Form::Written);
                }
                previous = Some((at, c));
                at += c.len_utf8();
            }
            if text[start..at].chars().nth(1).is_none() {
                emit(&text[start..at], start..at, Form::Written);
            }
            continue;
        }
        if !c.is_alphanumeric() {
            at += c.len_utf8();
            continue;
        }
        // A word: letters, digits and `_` of any script but CJK.
        let start = at;
        let mut ascii = true;
        while at < bytes.len() {
            let b = bytes[at];
            if b < 0x80 {
                if !is_word_byte(b) {
                    break;
                }
                at += 1;
                continue;
            }
            let c = char_at(at);
            if is_cjk(c) || !c.is_alphanumeric() {
                break;
            }
            ascii = false;
            at += c.len_utf8();
        }
        let word = &text[start..at];
        let mut written = |term: &str, span: Range<usize>| emit(term, span, Form::Written);
        compound.add(text, start..at, ascii, &mut scratch, &mut written);
        if ascii {
            emit_ascii_word(word, start, &mut scratch, &mut written);
            // `scratch` holds the word folded.
            if is_plain(word) && stem_into(&scratch, &mut stem) {
                emit(&stem, start..at, Form::Stem);
            }
        } else {
            emit_general_word(word, start, &mut scratch, &mut written);
        }
    }
    compound.end(text, &mut scratch, &mut |term: &str, span: Range<usize>| {
        emit(term, span, Form::Written);
    });
}

/// The chain of words joined by single `.` or `-` that the latest word belongs to.
#[derive(Default)]
struct Compound {
    span: Range<usize>,
    words: usize,
    ascii: bool,
}

impl Compound {
    /// The next word: it extends the chain when one joiner lies between them; otherwise the
    /// chain ends (and is emitted) and the word starts a new one.
    fn add(
        &mut self,
        text: &str,
        word: Range<usize>,
        ascii: bool,
        scratch: &mut String,
        emit: &mut impl FnMut(&str, Range<usize>),
    ) {
        let joined = self.words > 0
            && word.start == self.span.end + 1
            && matches!(text.as_bytes()[self.span.end], b'.' | b'-');
        if joined {
            self.span.end = word.end;
            self.words += 1;
            self.ascii &= ascii;
        } else {
            self.end(text, scratch, emit);
            *self = Self {
                span: word,
                words: 1,
                ascii,
            };
        }
    }

    /// Emits the chain, when it is a compound worth indexing.
    fn end(&mut self, text: &str, scratch: &mut String, emit: &mut impl FnMut(&str, Range<usize>)) {
        let span = std::mem::take(&mut self.span);
        if self.ascii
            && (2..=MAX_COMPOUND_WORDS).contains(&self.words)
            && (MIN_TERM_CHARS..=MAX_TERM_CHARS).contains(&span.len())
        {
            scratch.clear();
            scratch.push_str(&text[span.clone()]);
            scratch.make_ascii_lowercase();
            emit(scratch, span.clone());
            if let Some(bare) = bare_version(&text[span.clone()]) {
                emit(&scratch[bare.clone()], span.start + bare.start..span.end);
            }
        }
        self.words = 0;
    }
}

/// Where the bare version starts in a prefixed one (`v1.12.3`, `go1.22`, `python3.11`: letters,
/// then digits, then only words that start with a digit), so it is found as `1.12.3` too.
fn bare_version(compound: &str) -> Option<Range<usize>> {
    let bytes = compound.as_bytes();
    let digits = bytes.iter().position(u8::is_ascii_digit)?;
    let first_end = bytes.iter().position(|&b| b == b'.' || b == b'-')?;
    let prefixed = digits > 0
        && digits < first_end
        && bytes[..digits].iter().all(u8::is_ascii_alphabetic)
        && bytes[digits..first_end].iter().all(u8::is_ascii_digit);
    let rest_numeric = compound[first_end + 1..]
        .split(['.', '-'])
        .all(|word| word.starts_with(|c: char| c.is_ascii_digit()));
    (prefixed && rest_numeric).then_some(digits..compound.len())
}

/// Whether a word as written is a plain word, which has a stem (`Releases`, not `ReleaseNotes`,
/// `RELEASES` or `v2`).
pub(crate) fn is_plain(word: &str) -> bool {
    let bytes = word.as_bytes();
    (1..=MAX_TERM_CHARS).contains(&bytes.len())
        && bytes[0].is_ascii_alphabetic()
        && bytes[1..].iter().all(u8::is_ascii_lowercase)
}

/// ASCII letters, digits and `_`.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Emits a word (folded) and, for identifiers, its parts.
fn emit_general_word(
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
    if !(2..=MAX_PARTS).contains(&parts.len()) {
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

/// [`emit_general_word`] for ASCII words, without allocating: most text is ASCII, and this is the
/// hottest loop of ingest. A test checks it against the general path.
fn emit_ascii_word(
    word: &str,
    offset: usize,
    scratch: &mut String,
    emit: &mut impl FnMut(&str, Range<usize>),
) {
    scratch.clear();
    scratch.push_str(word);
    scratch.make_ascii_lowercase();
    let len = word.len();
    if (MIN_TERM_CHARS..=MAX_TERM_CHARS).contains(&len) {
        emit(scratch, offset..offset + len);
    }
    let bytes = word.as_bytes();
    if len > MAX_TERM_CHARS * 4 || bytes.iter().all(u8::is_ascii_lowercase) {
        return;
    }
    let mut parts: [Range<usize>; MAX_PARTS] = std::array::from_fn(|_| 0..0);
    let mut count = 0;
    split_ascii(bytes, &mut |part| {
        if count < MAX_PARTS {
            parts[count] = part;
        }
        count += 1;
    });
    if !(2..=MAX_PARTS).contains(&count) {
        return;
    }
    for part in &parts[..count] {
        if (MIN_TERM_CHARS..=MAX_TERM_CHARS).contains(&part.len()) {
            emit(
                &scratch[part.clone()],
                offset + part.start..offset + part.end,
            );
        }
    }
}

#[derive(PartialEq, Clone, Copy)]
enum AsciiClass {
    Lower,
    Upper,
    Digit,
    Other,
}

fn ascii_class(c: u8) -> AsciiClass {
    if c.is_ascii_digit() {
        AsciiClass::Digit
    } else if c.is_ascii_uppercase() {
        AsciiClass::Upper
    } else if c.is_ascii_lowercase() {
        AsciiClass::Lower
    } else {
        AsciiClass::Other
    }
}

/// Calls `visit` with the byte range of every part of an ASCII identifier (see
/// [`identifier_parts`] for the rules).
fn split_ascii(bytes: &[u8], visit: &mut dyn FnMut(Range<usize>)) {
    let mut start: Option<usize> = None;
    for i in 0..bytes.len() {
        let c = bytes[i];
        if c == b'_' {
            if let Some(s) = start.take() {
                visit(s..i);
            }
            continue;
        }
        let Some(s) = start else {
            start = Some(i);
            continue;
        };
        let boundary = match (ascii_class(bytes[i - 1]), ascii_class(c)) {
            (AsciiClass::Lower, AsciiClass::Upper) => true,
            (AsciiClass::Upper, AsciiClass::Upper) => bytes
                .get(i + 1)
                .is_some_and(|&n| ascii_class(n) == AsciiClass::Lower),
            (AsciiClass::Digit, AsciiClass::Digit) => false,
            (AsciiClass::Digit, _) | (_, AsciiClass::Digit) => true,
            _ => false,
        };
        if boundary {
            visit(s..i);
            start = Some(i);
        }
    }
    if let Some(s) = start {
        visit(s..bytes.len());
    }
}

/// Splits an identifier at `_`, lower→upper case changes, the end of an acronym (`HTTPServer` →
/// `HTTP`, `Server`) and letter/digit changes. Returns byte ranges within `word`.
pub(crate) fn identifier_parts(word: &str) -> Vec<Range<usize>> {
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

/// Tokens of `text` with their spans, collected (for tests; callers stream with
/// [`for_each_token`]).
#[cfg(test)]
pub(crate) fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for_each_token(text, |term, span, form| {
        out.push(Token {
            term: term.to_owned(),
            span,
            form,
        });
    });
    out
}

/// Distinct query terms as written (no stems), in first-seen order.
pub(crate) fn query_terms(query: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for_each_token(query, |term, _, form| {
        if form == Form::Written && seen.insert(term.to_owned()) {
            out.push(term.to_owned());
        }
    });
    out
}

/// Builds [`DocTerms`], reusing its buffer between documents.
#[derive(Default)]
pub struct Indexer {
    hashes: Vec<u64>,
}

impl Indexer {
    /// The index terms of `text`: every token hashed, then sorted and counted (cheaper than a
    /// hash map for the few hundred tokens of a typical document). Stems are terms but not
    /// length: a document's length is what it says, whatever the words' other names.
    pub fn index(&mut self, text: &str) -> DocTerms {
        self.hashes.clear();
        let mut written = 0usize;
        for_each_token(text, |term, _, form| {
            written += usize::from(form == Form::Written);
            self.hashes.push(term_hash(term));
        });
        let doc_len = written.min(u16::MAX as usize) as u16;
        self.hashes.sort_unstable();
        let mut terms = Vec::with_capacity(self.hashes.len() / 2 + 1);
        let mut tfs: Vec<u16> = Vec::with_capacity(terms.capacity());
        for &hash in &self.hashes {
            if terms.last() == Some(&hash) {
                let tf = tfs.last_mut().expect("parallel to terms");
                *tf = tf.saturating_add(1);
            } else {
                terms.push(hash);
                tfs.push(1);
            }
        }
        DocTerms {
            terms,
            tfs,
            doc_len,
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
        assert_eq!(terms("src/main.rs"), ["src", "main", "rs", "main.rs"]);
        assert_eq!(terms("utf8"), ["utf8", "utf"]);
    }

    #[test]
    fn test_dotted_and_hyphenated_compounds_are_whole_terms_too() {
        assert_eq!(terms("bump to 1.12.3."), ["bump", "to", "12", "1.12.3"]);
        assert_eq!(terms("v0.7.3"), ["v0", "v0.7.3", "0.7.3"]);
        assert_eq!(
            terms("RFC-9728 notes"),
            ["rfc", "9728", "rfc-9728", "notes", "~not"]
        );
        // Two joiners in a row, or a space, end the chain; long chains are not names.
        assert_eq!(terms("ab..cd ef - gh"), ["ab", "cd", "ef", "gh"]);
        assert_eq!(terms("a1-b2-c3-d4-e5-f6-g7-h8-i9").last().unwrap(), "i9");
        // The query side agrees: a version searched on its own finds itself first.
        assert!(query_terms("1.12.3").contains(&"1.12.3".to_owned()));
    }

    #[test]
    fn test_prefixed_versions_yield_the_bare_version() {
        // The build output's `lefthook v1.12.3` holds `1.12.3` whole, as a search for it asks.
        let lefthook = terms("lefthook v1.12.3");
        assert!(
            lefthook.contains(&"v1.12.3".to_owned()) && lefthook.contains(&"1.12.3".to_owned())
        );
        assert!(terms("go1.22.3").contains(&"1.22.3".to_owned()));
        assert!(terms("python3.11").contains(&"3.11".to_owned()));
        // Not a version: a name with a digit, or a chain with words after the numbers.
        assert!(!terms("utf8-encoding").contains(&"8-encoding".to_owned()));
        assert!(!terms("v1.2.3-rc1").contains(&"1.2.3-rc1".to_owned()));
        assert_eq!(bare_version("v1.12.3"), Some(1..7));
        assert_eq!(bare_version("1.12.3"), None);
        assert_eq!(bare_version("rfc-9728"), None);
    }

    #[test]
    fn test_plain_words_yield_their_stems_and_identifiers_do_not() {
        let stemmed = tokens("Releases fixed");
        assert_eq!(
            stemmed
                .iter()
                .map(|t| (t.term.as_str(), t.form))
                .collect::<Vec<_>>(),
            [
                ("releases", Form::Written),
                ("~releas", Form::Stem),
                ("fixed", Form::Written),
                ("~fix", Form::Stem)
            ]
        );
        assert_eq!(stemmed[1].span, stemmed[0].span);
        // Identifiers and their parts, acronyms and compounds stay exact.
        for exact in [
            "release_notes",
            "ReleaseNotes",
            "RELEASES",
            "fixed2",
            "v1.12.3",
        ] {
            assert!(
                tokens(exact).iter().all(|t| t.form == Form::Written),
                "{exact}"
            );
        }
        // The query side asks for the written words only.
        assert_eq!(query_terms("Releases fixed"), ["releases", "fixed"]);
        // A stem is a term, not length.
        let doc = Indexer::default().index("releases fixed");
        assert_eq!(doc.doc_len, 2);
        assert_eq!(doc.terms.len(), 4);
        assert!(doc.terms.contains(&term_hash("~fix")));
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
    fn test_ascii_fast_path_equals_the_general_path() {
        let alphabet = b"abcXYZ019_";
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = 1 + (state % 12) as usize;
            let word: String = (0..len)
                .map(|i| alphabet[((state >> (i * 5)) % alphabet.len() as u64) as usize] as char)
                .collect();
            let (mut fast, mut general) = (Vec::new(), Vec::new());
            let mut scratch = String::new();
            emit_ascii_word(&word, 3, &mut scratch, &mut |t: &str, r: Range<usize>| {
                fast.push((t.to_owned(), r));
            });
            emit_general_word(&word, 3, &mut scratch, &mut |t: &str, r: Range<usize>| {
                general.push((t.to_owned(), r));
            });
            assert_eq!(fast, general, "{word}");
        }
    }

    #[test]
    fn test_hash_matches_clickhouse_xxh3() {
        // SELECT xxh3('hello') in ClickHouse.
        assert_eq!(term_hash("hello"), 10760762337991515389);
    }
}
