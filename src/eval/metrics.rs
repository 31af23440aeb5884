//! Retrieval metrics from ranked hits: the rank of the first hit in a target session, MRR@10,
//! success@1/5/10 and hits in the target turn.

use serde::Serialize;

/// How many hits are asked for and scored.
pub(crate) const DEPTH: usize = 10;

/// One ranked hit: the session (its `session:` ID) and the turn ordinal it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub session: String,
    pub turn: u32,
}

/// What one system did with one question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Outcome {
    /// 1-based rank of the first hit in a target session, within the first [`DEPTH`].
    pub rank: Option<usize>,
    /// Whether a hit within the first [`DEPTH`] is in the target turn (`None` when the question
    /// names no turn).
    pub turn_hit: Option<bool>,
}

impl Outcome {
    /// The outcome of `hits`, in rank order, for a question answered by `targets` (and in the
    /// turn `turn` of session `turn.0`, when it names one).
    pub(crate) fn of(hits: &[Hit], targets: &[String], turn: Option<(&str, u32)>) -> Self {
        let top = &hits[..hits.len().min(DEPTH)];
        let rank = top
            .iter()
            .position(|hit| targets.contains(&hit.session))
            .map(|at| at + 1);
        let turn_hit = turn.map(|(session, ordinal)| {
            top.iter()
                .any(|hit| hit.session == session && hit.turn == ordinal)
        });
        Self { rank, turn_hit }
    }

    /// 1/rank, 0 when not found within [`DEPTH`].
    pub(crate) fn reciprocal_rank(&self) -> f64 {
        self.rank.map_or(0.0, |rank| 1.0 / rank as f64)
    }

    /// Whether a target session is within the first `k` hits.
    pub(crate) fn success_at(&self, k: usize) -> bool {
        self.rank.is_some_and(|rank| rank <= k)
    }
}

/// The metrics of a set of outcomes (means over questions).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Scores {
    pub questions: usize,
    pub mrr_at_10: f64,
    pub success_at_1: f64,
    pub success_at_5: f64,
    pub success_at_10: f64,
    /// Questions that name a turn, and those with a hit in it.
    pub turn_questions: usize,
    pub turn_hits: usize,
}

impl Scores {
    pub(crate) fn of<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Self {
        let mut scores = Self::default();
        let (mut rr, mut s1, mut s5, mut s10) = (0.0, 0, 0, 0);
        for outcome in outcomes {
            scores.questions += 1;
            rr += outcome.reciprocal_rank();
            s1 += usize::from(outcome.success_at(1));
            s5 += usize::from(outcome.success_at(5));
            s10 += usize::from(outcome.success_at(10));
            if let Some(hit) = outcome.turn_hit {
                scores.turn_questions += 1;
                scores.turn_hits += usize::from(hit);
            }
        }
        let n = scores.questions.max(1) as f64;
        scores.mrr_at_10 = rr / n;
        scores.success_at_1 = s1 as f64 / n;
        scores.success_at_5 = s5 as f64 / n;
        scores.success_at_10 = s10 as f64 / n;
        scores
    }

    /// The share of questions naming a turn that have a hit in it.
    pub(crate) fn turn_rate(&self) -> Option<f64> {
        (self.turn_questions > 0).then(|| self.turn_hits as f64 / self.turn_questions as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(sessions: &[(&str, u32)]) -> Vec<Hit> {
        sessions
            .iter()
            .map(|(session, turn)| Hit {
                session: (*session).to_owned(),
                turn: *turn,
            })
            .collect()
    }

    fn at(rank: Option<usize>) -> Outcome {
        Outcome {
            rank,
            turn_hit: None,
        }
    }

    #[test]
    fn test_the_rank_is_that_of_the_first_hit_in_any_target_session() {
        let ranked = hits(&[("x", 1), ("b", 4), ("a", 2), ("a", 3)]);
        let targets = ["a".to_owned(), "b".to_owned()];
        let outcome = Outcome::of(&ranked, &targets, Some(("a", 3)));
        assert_eq!(outcome.rank, Some(2));
        assert_eq!(outcome.turn_hit, Some(true));
        // A turn of the right ordinal in another session is no turn hit.
        let outcome = Outcome::of(&ranked, &["a".to_owned()], Some(("a", 4)));
        assert_eq!((outcome.rank, outcome.turn_hit), (Some(3), Some(false)));
        assert_eq!(Outcome::of(&ranked, &["z".to_owned()], None), at(None));
    }

    #[test]
    fn test_hits_past_the_tenth_do_not_count() {
        let mut ranked = hits(&[("x", 1); DEPTH]);
        ranked.push(Hit {
            session: "a".into(),
            turn: 2,
        });
        let outcome = Outcome::of(&ranked, &["a".to_owned()], Some(("a", 2)));
        assert_eq!((outcome.rank, outcome.turn_hit), (None, Some(false)));
        ranked.swap(DEPTH - 1, DEPTH);
        let outcome = Outcome::of(&ranked, &["a".to_owned()], Some(("a", 2)));
        assert_eq!((outcome.rank, outcome.turn_hit), (Some(10), Some(true)));
    }

    #[test]
    fn test_mrr_and_success_at_k_from_known_ranks() {
        let outcomes = [
            at(Some(1)),
            at(Some(2)),
            at(None),
            at(Some(5)),
            at(Some(10)),
        ];
        let scores = Scores::of(&outcomes);
        assert_eq!(scores.questions, 5);
        let mrr = (1.0 + 0.5 + 0.0 + 0.2 + 0.1) / 5.0;
        assert!(
            (scores.mrr_at_10 - mrr).abs() < 1e-12,
            "{}",
            scores.mrr_at_10
        );
        assert!((scores.success_at_1 - 0.2).abs() < 1e-12);
        assert!((scores.success_at_5 - 0.6).abs() < 1e-12);
        assert!((scores.success_at_10 - 0.8).abs() < 1e-12);
        assert_eq!(scores.turn_rate(), None);
    }

    #[test]
    fn test_turn_hits_count_only_questions_that_name_a_turn() {
        let outcomes = [
            Outcome {
                rank: Some(1),
                turn_hit: Some(true),
            },
            Outcome {
                rank: Some(3),
                turn_hit: Some(false),
            },
            at(Some(1)),
        ];
        let scores = Scores::of(&outcomes);
        assert_eq!((scores.turn_questions, scores.turn_hits), (2, 1));
        assert_eq!(scores.turn_rate(), Some(0.5));
    }

    #[test]
    fn test_no_questions_score_zero() {
        let scores = Scores::of(&[]);
        assert_eq!(scores.questions, 0);
        assert_eq!(scores.mrr_at_10, 0.0);
    }
}
