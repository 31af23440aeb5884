//! A global search's page spread over sessions: at most `tools.hits_per_session` hits of one
//! session (one by default) before the other sessions' best hits, so one long session of
//! similar answers cannot take the page. Scoped searches (a session, a turn) keep every hit.

use super::sql::Scored;

/// Candidates read per hit asked for, for the page to choose from.
pub(super) const CANDIDATES_PER_HIT: u32 = 3;
/// Most candidates read, whatever `n_hits` asks.
pub(super) const MAX_CANDIDATES: u32 = 150;

/// How many candidates a global search of `n_hits` reads (one more than it can show, to tell
/// whether more matched).
pub(super) fn candidates(n_hits: u32) -> u32 {
    (n_hits * CANDIDATES_PER_HIT)
        .min(MAX_CANDIDATES)
        .max(n_hits)
        + 1
}

/// The page of `n_hits` from `scored` (best first): the best hits, each session's past its
/// first `per_session` set aside while others remain, then in score order again. Returns the
/// page and whether anything matched beyond it.
pub(super) fn page(scored: Vec<Scored>, n_hits: usize, per_session: usize) -> (Vec<Scored>, bool) {
    let more = scored.len() > n_hits;
    let mut taken: Vec<(usize, Scored)> = Vec::with_capacity(n_hits);
    let mut set_aside: Vec<(usize, Scored)> = Vec::new();
    let mut shown: std::collections::HashMap<u64, usize> = Default::default();
    for (at, hit) in scored.into_iter().enumerate() {
        if taken.len() == n_hits {
            break;
        }
        let count = shown.entry(hit.sess).or_default();
        if *count < per_session {
            *count += 1;
            taken.push((at, hit));
        } else {
            set_aside.push((at, hit));
        }
    }
    let missing = n_hits.saturating_sub(taken.len());
    taken.extend(set_aside.into_iter().take(missing));
    // Back in the order the statement ranked them (score, then its tie-breaks).
    taken.sort_by_key(|(at, _)| *at);
    (taken.into_iter().map(|(_, hit)| hit).collect(), more)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_one_session_cannot_take_the_page_but_fills_what_others_leave() {
        let scored: Vec<Scored> = (0..8)
            .map(|i| Scored::of(1, i, 10.0 - i as f64))
            .chain([Scored::of(2, 100, 1.0), Scored::of(3, 200, 0.5)])
            .collect();
        let (page, more) = page(scored.clone(), 5, 3);
        let docs: Vec<u64> = page.iter().map(|h| h.doc).collect();
        assert_eq!(docs, [0, 1, 2, 100, 200]);
        assert!(more);
        // Scores still fall down the page.
        assert!(page.windows(2).all(|w| w[0].score >= w[1].score));
        // Fewer other sessions than the page holds: the best set-aside hits fill it.
        let (page, _) = page_of(&scored, 7, 3);
        assert_eq!(page, [0, 1, 2, 3, 4, 100, 200]);
        // One hit per session (the default): each session's best first, then the rest.
        assert_eq!(page_of(&scored, 3, 1).0, [0, 100, 200]);
        assert_eq!(page_of(&scored, 5, 1).0, [0, 1, 2, 100, 200]);
        assert_eq!(candidates(10), 31);
        assert_eq!(candidates(50), MAX_CANDIDATES + 1);
    }

    fn page_of(scored: &[Scored], n: usize, per_session: usize) -> (Vec<u64>, bool) {
        let (page, more) = page(scored.to_vec(), n, per_session);
        (page.iter().map(|h| h.doc).collect(), more)
    }
}
