//! Search snippets: a short window of an event's text around the query terms it matched.

use std::collections::{HashMap, HashSet};

use crate::tokenize::for_each_token;

/// Only this much of a long text is scanned for matches: the work per snippet is bounded
/// whatever the event's size (a snippet of a longer text shows a window of its start).
pub(super) const SCAN_BYTES: usize = 64 * 1024;

/// The window of at most `max_chars` characters of `text` that holds the most distinct query
/// terms, whitespace-collapsed, with `…` where it was cut. Returns the text and whether it is
/// shorter than the event's full text.
pub(super) fn snippet(text: &str, terms: &HashSet<String>, max_chars: usize) -> (String, bool) {
    let scanned = &text[..crate::text::floor_char_boundary(text, SCAN_BYTES)];
    // (byte offset, term) of every occurrence of a query term.
    let mut matches: Vec<(usize, &str)> = Vec::new();
    for_each_token(scanned, |term, span, _| {
        if let Some(term) = terms.get(term) {
            matches.push((span.start, term));
        }
    });
    // A compound comes after the words it joins: put it back in text order.
    matches.sort_by_key(|&(start, _)| start);
    let best = densest_window(&matches, max_chars * 4 / 2);
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

/// The (distinct terms, start byte) of the window of `span` bytes, starting at a match, that
/// holds the most distinct terms (the first such window); `(0, 0)` without matches. One pass:
/// the window's right end only moves forward.
fn densest_window(matches: &[(usize, &str)], span: usize) -> (usize, usize) {
    let mut counts: HashMap<&str, u32> = HashMap::new();
    let mut distinct = 0;
    let mut right = 0;
    let mut best = (0, 0);
    for &(start, term) in matches {
        while right < matches.len() && matches[right].0 - start <= span {
            let count = counts.entry(matches[right].1).or_insert(0);
            distinct += usize::from(*count == 0);
            *count += 1;
            right += 1;
        }
        if distinct > best.0 {
            best = (distinct, start);
        }
        let count = counts
            .get_mut(term)
            .expect("counted when the window reached it");
        *count -= 1;
        distinct -= usize::from(*count == 0);
    }
    best
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
    fn test_densest_window_matches_the_exhaustive_scan() {
        // The window search of earlier versions: for each start, count forward.
        fn exhaustive(matches: &[(usize, &str)], span: usize) -> (usize, usize) {
            let mut best = (0, 0);
            for (i, (start, _)) in matches.iter().enumerate() {
                let seen: HashSet<&str> = matches[i..]
                    .iter()
                    .take_while(|(at, _)| at - start <= span)
                    .map(|(_, t)| *t)
                    .collect();
                if seen.len() > best.0 {
                    best = (seen.len(), *start);
                }
            }
            best
        }
        let words = ["a", "b", "c", "d"];
        let mut state = 7u64;
        for round in 0..200 {
            let mut at = 0;
            let matches: Vec<(usize, &str)> = (0..(round % 40))
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    at += (state >> 33) as usize % 50;
                    (at, words[(state >> 13) as usize % words.len()])
                })
                .collect();
            for span in [0, 10, 60, 500] {
                assert_eq!(densest_window(&matches, span), exhaustive(&matches, span));
            }
        }
    }

    #[test]
    fn test_dense_matches_in_a_long_text_are_cheap() {
        let text = "error ".repeat(2_000_000);
        let (snip, cut) = snippet(&text, &terms(&["error"]), 240);
        assert!(cut && snip.starts_with("error error"));
    }

    #[test]
    fn test_cjk_match() {
        let text = format!("{}数据库迁移失败了", "前".repeat(300));
        let (snip, _) = snippet(&text, &terms(&["迁移"]), 40);
        assert!(snip.contains("迁移"), "{snip}");
    }
}
