//! Search snippets: a short window of an event's text around the query terms it matched.

use std::collections::HashSet;

use crate::tokenize::for_each_token;

/// Only this much of a long text is scanned for matches (the snippet never shows more).
const SCAN_BYTES: usize = 1 << 20;

/// The window of at most `max_chars` characters of `text` that holds the most distinct query
/// terms, whitespace-collapsed, with `…` where it was cut. Returns the text and whether it is
/// shorter than the event's full text.
pub(super) fn snippet(text: &str, terms: &HashSet<String>, max_chars: usize) -> (String, bool) {
    let scanned = &text[..crate::text::floor_char_boundary(text, SCAN_BYTES)];
    // (byte offset, term) of every occurrence of a query term.
    let mut matches: Vec<(usize, &str)> = Vec::new();
    for_each_token(scanned, |term, span| {
        if let Some(term) = terms.get(term) {
            matches.push((span.start, term));
        }
    });
    let window_bytes = max_chars * 4;
    let mut best = (0usize, 0usize); // (distinct terms, start byte)
    let mut seen: HashSet<&str> = HashSet::new();
    for (i, (start, _)) in matches.iter().enumerate() {
        seen.clear();
        for (at, term) in &matches[i..] {
            if at - start > window_bytes / 2 {
                break;
            }
            seen.insert(term);
        }
        if seen.len() > best.0 {
            best = (seen.len(), *start);
        }
    }
    // Start a little before the first match, at a word boundary, so the match has context;
    // from the very start when the match is near it.
    let anchor = if best.0 == 0 { 0 } else { best.1 };
    let context = max_chars / 5;
    let head = &text[..anchor];
    let mut back = head.char_indices().rev();
    // The `context`-th character before the anchor, when there are more than `context`.
    let start = match (back.nth(context.max(1) - 1), back.next()) {
        (Some((from, _)), Some(_)) => head[from..]
            .char_indices()
            .find(|(_, c)| c.is_whitespace())
            .map_or(from, |(at, c)| from + at + c.len_utf8()),
        _ => 0,
    };
    collapse(text, start, max_chars)
}

/// Collapses whitespace from `start` on and cuts at `max_chars` characters, marking cuts.
fn collapse(text: &str, start: usize, max_chars: usize) -> (String, bool) {
    let mut out = String::with_capacity(max_chars + 8);
    let head_cut = !text[..start].trim().is_empty();
    if head_cut {
        out.push('…');
    }
    let mut count = out.chars().count();
    let mut pending_space = false;
    let mut tail_cut = false;
    for c in text[start..].chars() {
        if c.is_whitespace() {
            pending_space = count > usize::from(head_cut);
            continue;
        }
        if count + usize::from(pending_space) + 1 > max_chars.saturating_sub(1) {
            tail_cut = true;
            break;
        }
        if pending_space {
            out.push(' ');
            count += 1;
            pending_space = false;
        }
        out.push(c);
        count += 1;
    }
    if tail_cut {
        out.push('…');
    }
    (out, head_cut || tail_cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(words: &[&str]) -> HashSet<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn test_short_text_is_whole() {
        assert_eq!(
            snippet("cargo test  failed", &terms(&["cargo"]), 100),
            ("cargo test failed".into(), false)
        );
    }

    #[test]
    fn test_window_centres_on_matches() {
        let text = format!(
            "{} the migration failed with a checksum error {}",
            "lorem ipsum ".repeat(200),
            "dolor ".repeat(200)
        );
        let (snip, cut) = snippet(&text, &terms(&["migration", "checksum"]), 80);
        assert!(cut);
        assert!(snip.contains("migration failed"), "{snip}");
        assert!(snip.contains("checksum"), "{snip}");
        assert!(snip.starts_with('…') && snip.ends_with('…'));
        assert!(snip.chars().count() <= 80);
    }

    #[test]
    fn test_no_match_falls_back_to_the_start() {
        let (snip, cut) = snippet(&"word ".repeat(100), &terms(&["absent"]), 30);
        assert!(snip.starts_with("word word"));
        assert!(cut);
        assert!(snip.chars().count() <= 30);
    }

    #[test]
    fn test_cjk_match() {
        let text = format!("{}数据库迁移失败了", "前".repeat(300));
        let (snip, _) = snippet(&text, &terms(&["迁移"]), 40);
        assert!(snip.contains("迁移"), "{snip}");
    }
}
