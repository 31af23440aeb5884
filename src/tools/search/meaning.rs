//! A global search's ranking by meaning, fused with its ranking by words: the sessions whose
//! prose lies closest to the question's vector (see [`crate::semantic`]), and reciprocal-rank
//! fusion of the two orders, so that a session found by both rises and one found only by
//! meaning joins the candidates below those words found.

use std::collections::HashMap;
use std::time::Instant;

use serde::Deserialize;

use super::Read;
use super::sql::{self, Scored};
use crate::semantic::Embedder;
use crate::tools::envelope::ToolError;

/// Reciprocal-rank fusion's constant: a rank counts 1/(K + rank), so the first few ranks of
/// either order differ little and neither order's top alone decides. 60 is the value the
/// method was published with; `moraine-mcp eval` measured 10 and 30 the same.
const RRF_K: f64 = 60.0;

/// A session close to the question, and the event a hit on it by meaning alone shows (its
/// first user input, else its first answer) with that event's turn.
#[derive(Debug, Clone, PartialEq, clickhouse::Row, Deserialize)]
pub(super) struct Closest {
    pub sess: u64,
    pub turn: u32,
    pub event: u64,
}

impl Read<'_> {
    /// The `n` sessions closest to `query` in meaning, closest first, within the search's
    /// filters (`None` when the query has no tokens the model knows).
    pub(super) async fn closest(
        &self,
        embedder: &Embedder,
        query: &str,
        n: u32,
        deadline: Instant,
    ) -> Result<Option<Vec<Closest>>, ToolError> {
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

/// `scored` (best first) fused with `closest` (closest first) by reciprocal rank: each hit
/// counts 1/(K + its rank) plus `weight`/(K + its session's rank by meaning), and each session
/// found by meaning alone adds a hit on its first user input. Best first again, ties broken as the
/// scoring statement breaks them (newer event, then session and event key).
pub(super) fn fuse(scored: Vec<Scored>, closest: &[Closest], weight: f64) -> Vec<Scored> {
    let by_meaning: HashMap<u64, f64> = closest
        .iter()
        .enumerate()
        .map(|(rank, c)| (c.sess, weight / (RRF_K + rank as f64 + 1.0)))
        .collect();
    let mut found_by_words = std::collections::HashSet::new();
    let mut fused: Vec<Scored> = scored
        .into_iter()
        .enumerate()
        .map(|(rank, mut hit)| {
            found_by_words.insert(hit.sess);
            hit.score = 1.0 / (RRF_K + rank as f64 + 1.0)
                + by_meaning.get(&hit.sess).copied().unwrap_or(0.0);
            hit
        })
        .collect();
    fused.extend(
        closest
            .iter()
            .filter(|c| !found_by_words.contains(&c.sess))
            .map(|c| Scored {
                sess: c.sess,
                doc: c.event,
                turn_ordinal: c.turn,
                score: by_meaning[&c.sess],
            }),
    );
    fused.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then((b.doc >> 20).cmp(&(a.doc >> 20)))
            .then(a.sess.cmp(&b.sess))
            .then(a.doc.cmp(&b.doc))
    });
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closest(sess: u64, event: u64) -> Closest {
        Closest {
            sess,
            turn: 1,
            event,
        }
    }

    #[test]
    fn test_a_session_found_by_both_rises_and_one_found_by_meaning_alone_joins_below() {
        // Words rank sessions 1, 2, 3; meaning ranks 3 first, then 9 (which no word found).
        let scored = vec![
            Scored::of(1, 10 << 20, 9.0),
            Scored::of(2, 20 << 20, 8.0),
            Scored::of(3, 30 << 20, 7.0),
        ];
        let fused = fuse(scored.clone(), &[closest(3, 31), closest(9, 90)], 1.0);
        let order: Vec<u64> = fused.iter().map(|h| h.sess).collect();
        assert_eq!(order, [3, 1, 2, 9]);
        // The session found by meaning alone shows its event.
        assert_eq!((fused[3].doc, fused[3].turn_ordinal), (90, 1));
        assert!(fused.windows(2).all(|w| w[0].score >= w[1].score));
        // Weight 0, or nothing found by meaning: the words' order stands.
        let alone: Vec<u64> = fuse(scored.clone(), &[], 1.0)
            .iter()
            .map(|h| h.sess)
            .collect();
        assert_eq!(alone, [1, 2, 3]);
        let unweighted: Vec<u64> = fuse(scored, &[closest(3, 31)], 0.0)
            .iter()
            .map(|h| h.sess)
            .collect();
        assert_eq!(unweighted, [1, 2, 3]);
    }
}
