//! A global search's hits weighed with their sessions' match of the whole query: a session
//! whose events together hold more of the question's words lifts its hits above a session
//! where one event happens to match alone. A question asked in other words than the session
//! used often shares a few words with many of its events and none with any one of them.

use std::collections::HashMap;
use std::time::Instant;

use super::sql::{SESSION_TERMS_SQL, Scored};
use crate::tools::context::Context;
use crate::tools::envelope::ToolError;

/// The terms a search asks for, as the scoring statement weighs them.
pub(super) struct Asked<'a> {
    pub hashes: &'a [u64],
    pub idfs: &'a [f64],
    pub kinds: &'a [u8],
}

/// `scored` (best first) with each hit lifted by its session's score, in the new order.
pub(super) async fn weigh(
    ctx: &Context,
    asked: &Asked<'_>,
    scored: Vec<Scored>,
    deadline: Instant,
) -> Result<Vec<Scored>, ToolError> {
    let weight = ctx.config.bm25.session_weight;
    let mut sessions: Vec<u64> = scored.iter().map(|s| s.sess).collect();
    sessions.sort_unstable();
    sessions.dedup();
    if weight == 0.0 || sessions.len() < 2 {
        return Ok(scored);
    }
    let counts: Vec<(u64, u64, u64)> = match ctx
        .db
        .read("search_session_terms", SESSION_TERMS_SQL)
        .param("terms", asked.hashes)
        .param("kinds", asked.kinds)
        .param("sessions", &sessions)
        .fetch_all(&ctx.db, deadline)
        .await
    {
        Ok(counts) => counts,
        // The hits stand on their own scores: a lift that cannot be read is left out, and the
        // reads after it report a backend that is down.
        Err(error) => {
            tracing::warn!(%error, "session scores not read; hits ranked by their events alone");
            return Ok(scored);
        }
    };
    let by_session = session_scores(asked, &counts, ctx.config.bm25.k1);
    Ok(lift(scored, &by_session, weight))
}

/// Each session's BM25 score for the query from its term counts (`(session, term, count)`): a
/// term's counts are summed over the session, and no length is normalised, since a session that
/// says more about the question is the likelier answer. Summed here, in the query's term order,
/// so equal inputs give bit-equal scores whatever order the rows arrive in.
fn session_scores(asked: &Asked<'_>, counts: &[(u64, u64, u64)], k1: f64) -> HashMap<u64, f64> {
    let mut by_session: HashMap<u64, Vec<f64>> = HashMap::new();
    for &(sess, term, n) in counts {
        let Some(at) = asked.hashes.iter().position(|h| *h == term) else {
            continue;
        };
        let n = n as f64;
        let parts = by_session
            .entry(sess)
            .or_insert_with(|| vec![0.0; asked.hashes.len()]);
        parts[at] = asked.idfs[at] * n * (k1 + 1.0) / (n + k1);
    }
    by_session
        .into_iter()
        .map(|(sess, parts)| (sess, parts.iter().sum()))
        .collect()
}

/// Each hit's score plus `weight` × the best hit's score × its session's share of the best
/// session's score, ranked again as the scoring statement ranks (score, then newer, then key).
fn lift(mut scored: Vec<Scored>, by_session: &HashMap<u64, f64>, weight: f64) -> Vec<Scored> {
    let best_hit = scored.iter().map(|s| s.score).fold(0.0, f64::max);
    let best_session = by_session.values().copied().fold(0.0, f64::max);
    if best_hit <= 0.0 || best_session <= 0.0 {
        return scored;
    }
    for hit in &mut scored {
        let session = by_session.get(&hit.sess).copied().unwrap_or(0.0);
        hit.score += weight * best_hit * session / best_session;
    }
    scored.sort_by(Scored::ranked);
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(scored: &[Scored]) -> Vec<(u64, u64)> {
        scored.iter().map(|s| (s.sess, s.doc)).collect()
    }

    #[test]
    fn test_a_session_matching_the_whole_question_lifts_its_hits() {
        // Session 1 has the best single event; session 2 holds more of the question overall.
        let scored = vec![
            Scored::of(1, 10 << 20, 4.0),
            Scored::of(2, 20 << 20, 3.5),
            Scored::of(2, 21 << 20, 1.0),
        ];
        let sessions = HashMap::from([(1, 2.0), (2, 8.0)]);
        let lifted = lift(scored.clone(), &sessions, 0.4);
        assert_eq!(
            order(&lifted),
            [(2, 20 << 20), (1, 10 << 20), (2, 21 << 20)]
        );
        // 3.5 + 0.4 × 4 × 8/8 and 4 + 0.4 × 4 × 2/8.
        assert!((lifted[0].score - 5.1).abs() < 1e-9 && (lifted[1].score - 4.4).abs() < 1e-9);
        // At weight 0, or with no session score, the order is the events' own.
        assert_eq!(order(&lift(scored.clone(), &sessions, 0.0)), order(&scored));
        assert_eq!(
            order(&lift(scored.clone(), &HashMap::new(), 0.4)),
            order(&scored)
        );
    }

    #[test]
    fn test_session_scores_sum_each_terms_counts_whatever_the_row_order() {
        let asked = Asked {
            hashes: &[7, 8, 9],
            idfs: &[1.0, 2.0, 0.5],
            kinds: &[1],
        };
        let rows = [(1, 7, 1), (1, 8, 3), (2, 9, 2), (1, 42, 5)];
        let scores = session_scores(&asked, &rows, 1.0);
        // 1 × 1·2/2 + 2 × 3·2/4; a term the query does not hold counts nothing.
        assert_eq!(scores[&1], 4.0);
        assert_eq!(scores[&2], 0.5 * 2.0 * 2.0 / 3.0);
        let mut reversed = rows;
        reversed.reverse();
        assert_eq!(session_scores(&asked, &reversed, 1.0), scores);
        // k1 = 0: each term counts its IDF once, however often it occurs.
        assert_eq!(session_scores(&asked, &rows, 0.0)[&1], 3.0);
    }

    #[test]
    fn test_ties_keep_the_scoring_statements_order() {
        // Equal scores: the newer event first, then the lower session and event key.
        let scored = vec![
            Scored::of(3, 5 << 20, 1.0),
            Scored::of(1, 9 << 20, 1.0),
            Scored::of(2, 9 << 20, 1.0),
        ];
        let lifted = lift(scored, &HashMap::from([(1, 1.0), (2, 1.0), (3, 1.0)]), 0.4);
        assert_eq!(order(&lifted), [(1, 9 << 20), (2, 9 << 20), (3, 5 << 20)]);
    }
}
