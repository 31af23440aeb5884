//! A global search's ranking by meaning, fused with its ranking by words: the sessions whose
//! prose lies closest to the question's vector (see [`crate::semantic`]), and reciprocal-rank
//! fusion of that order with the BM25 candidates, so that a candidate whose session is also
//! close in meaning rises. The candidates stay those words found: meaning reorders them, never
//! adds a hit that holds none of the question's words.

use std::collections::HashMap;
use std::time::Instant;

use super::Read;
use super::sql::{self, Scored};
use crate::semantic::Embedder;
use crate::tools::envelope::ToolError;

/// Reciprocal-rank fusion's constant: a rank counts 1/(K + rank). The method was published
/// with 60, under which the first ranks of either order differ little; on its dev questions
/// `moraine-mcp eval` measured every k from 7 to 15 best (5, 20, 30 and 60 lower), so the top
/// of each order counts for more.
const RRF_K: f64 = 10.0;

impl Read<'_> {
    /// The keys of the `n` sessions closest to `query` in meaning, closest first, within the
    /// search's filters (`None` when the query has no tokens the model knows).
    pub(super) async fn closest(
        &self,
        embedder: &Embedder,
        query: &str,
        n: u32,
        deadline: Instant,
    ) -> Result<Option<Vec<u64>>, ToolError> {
        let Some(vector) = embedder.embed(query) else {
            return Ok(None);
        };
        let statement = crate::db::splice(
            sql::CLOSEST_SESSIONS_SQL,
            &[("filters", &self.fragments.join(" "))],
        );
        let read = self
            .bind(self.ctx.db.read("search_meaning", &statement))?
            .param("q", &vector)
            .param("n", n);
        Ok(Some(read.fetch_all(&self.ctx.db, deadline).await?))
    }
}

/// `scored` (best first) fused with `closest` (session keys, closest first) by reciprocal
/// rank: each hit counts 1/(K + its rank) plus `weight`/(K + its session's rank by meaning),
/// nothing when its session is not among the closest. Best first again, ties broken as the
/// scoring statement breaks them (newer event, then session and event key).
pub(super) fn fuse(scored: Vec<Scored>, closest: &[u64], weight: f64) -> Vec<Scored> {
    let by_meaning: HashMap<u64, f64> = closest
        .iter()
        .enumerate()
        .map(|(rank, sess)| (*sess, weight / (RRF_K + rank as f64 + 1.0)))
        .collect();
    let mut fused: Vec<Scored> = scored
        .into_iter()
        .enumerate()
        .map(|(rank, mut hit)| {
            hit.score = 1.0 / (RRF_K + rank as f64 + 1.0)
                + by_meaning.get(&hit.sess).copied().unwrap_or(0.0);
            hit
        })
        .collect();
    fused.sort_by(Scored::ranked);
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_a_hit_whose_session_is_close_in_meaning_rises_and_no_hit_is_added() {
        // Words rank sessions 1, 2, 3; meaning ranks 3 first, then 9 (which no word found).
        let scored = vec![
            Scored::of(1, 10 << 20, 9.0),
            Scored::of(2, 20 << 20, 8.0),
            Scored::of(3, 30 << 20, 7.0),
        ];
        let fused = fuse(scored.clone(), &[3, 9], 1.0);
        let order: Vec<u64> = fused.iter().map(|h| h.sess).collect();
        assert_eq!(order, [3, 1, 2]);
        assert!(fused.windows(2).all(|w| w[0].score > w[1].score));
        // Nothing close in meaning, or weight 0: the words' order stands.
        let alone: Vec<u64> = fuse(scored.clone(), &[], 1.0)
            .iter()
            .map(|h| h.sess)
            .collect();
        assert_eq!(alone, [1, 2, 3]);
        let unweighted: Vec<u64> = fuse(scored, &[3], 0.0).iter().map(|h| h.sess).collect();
        assert_eq!(unweighted, [1, 2, 3]);
    }

    #[test]
    fn test_equal_fused_scores_keep_the_statements_tie_break() {
        // Two hits of one session at the same rank of words cannot happen; two sessions at
        // mirrored ranks can: 1st by words and 2nd by meaning against 2nd and 1st.
        let scored = vec![Scored::of(1, 5 << 20, 2.0), Scored::of(2, 7 << 20, 1.0)];
        let fused = fuse(scored, &[2, 1], 1.0);
        // Equal scores: the newer event first.
        assert_eq!(fused[0].score, fused[1].score);
        assert_eq!(fused.iter().map(|h| h.sess).collect::<Vec<_>>(), [2, 1]);
    }
}
