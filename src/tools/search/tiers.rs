//! Exact top-k over impact tiers (`sql/009_impact_tiers.sql`): which tiers of each query term a
//! global search must read so that it returns exactly what reading every posting returns.
//!
//! A tier's postings contribute at most `bound` (its largest term frequency in its shortest
//! document, under today's statistics). With `θ` a lower bound on the k-th best score and `M_t`
//! the largest bound of term `t`'s tiers, a document scoring at least `θ` gets at least
//! `τ_t = θ − Σ_{u≠t} M_u` from every term `t` (the others give at most their `M`). So when
//! `τ_t > 0`, only term `t`'s tiers whose bound reaches `τ_t` can hold a posting of a top-k
//! document; reading just those gives every document scoring at least `θ` its whole score, and
//! the top k of that read are the top k of all. `θ` comes from a first read of each term's best
//! tiers, a few thousand postings: the k-th best of those partial sums is at most the k-th best
//! full score.

/// Tier classes, as `sql/009_impact_tiers.sql` assigns them: term frequency `tf ≤ TF_MAX[c]`
/// (class `c` = `tier / 16`), document length `≥ LENGTH_MIN[c]` (class `c` = `tier % 16`).
const TF_MAX: [f64; 8] = [1.0, 2.0, 3.0, 5.0, 8.0, 16.0, 32.0, u16::MAX as f64];
const LENGTH_MIN: [f64; 10] = [
    0.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0,
];

/// Relative slack on every comparison, so that the engine's rounding of a contribution can
/// never put it above the bound computed here.
const SLACK: f64 = 1e-9;

/// How many postings of each term the first read takes, best tiers first (at least one tier):
/// a share of them, at most a few thousand. BM25 saturates, so most of a frequent term's
/// postings have bounds within a factor of two of its best: a first read by bound would read
/// most of them. A few thousand postings of the best tiers give `θ` for a top k of tens.
const FIRST_READ_POSTINGS: u64 = 2048;
const FIRST_READ_SHARE: u64 = 16;

/// BM25's parameters and statistics for one query.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bm25 {
    pub k1: f64,
    pub b: f64,
    pub avgdl: f64,
}

impl Bm25 {
    /// The most a posting of tier `tier` can contribute for a term of inverse document
    /// frequency `idf`: BM25 grows with the frequency and shrinks with the length.
    pub(super) fn bound(&self, idf: f64, tier: u8) -> f64 {
        // A code outside the tables (the index never writes one) gets the largest bound.
        let tf = TF_MAX
            .get(usize::from(tier / 16))
            .copied()
            .unwrap_or(f64::from(u16::MAX));
        let length = LENGTH_MIN
            .get(usize::from(tier % 16))
            .copied()
            .unwrap_or(0.0);
        let norm = self.k1 * (1.0 - self.b + self.b * length / self.avgdl.max(f64::MIN_POSITIVE));
        idf * tf * (self.k1 + 1.0) / (tf + norm) * (1.0 + SLACK)
    }
}

/// One query term's tiers with their bounds and postings, best first.
#[derive(Debug, Clone)]
pub(super) struct TermTiers {
    pub term: u64,
    tiers: Vec<(u8, f64, u64)>,
}

impl TermTiers {
    /// `tiers`: each tier the term has postings in, and how many.
    pub(super) fn new(term: u64, idf: f64, tiers: &[(u8, u64)], bm25: &Bm25) -> Self {
        let mut tiers: Vec<(u8, f64, u64)> = tiers
            .iter()
            .map(|&(t, n)| (t, bm25.bound(idf, t), n))
            .collect();
        tiers.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        tiers.dedup_by_key(|t| t.0);
        Self { term, tiers }
    }

    /// The best tiers, down to the one that brings their postings to `postings`.
    fn best_postings(&self, postings: u64) -> impl Iterator<Item = (u64, u8)> + '_ {
        let mut before = 0;
        self.tiers
            .iter()
            .take_while(move |t| {
                let take = before < postings.max(1);
                before += t.2;
                take
            })
            .map(|t| (self.term, t.0))
    }

    fn best(&self) -> f64 {
        self.tiers.first().map_or(0.0, |t| t.1)
    }

    /// The tiers whose bound reaches `floor`.
    fn down_to(&self, floor: f64) -> impl Iterator<Item = (u64, u8)> + '_ {
        self.tiers
            .iter()
            .take_while(move |t| t.1 >= floor)
            .map(|t| (self.term, t.0))
    }
}

/// What a search reads.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Plan {
    /// Every posting of every term (no term's tiers can be skipped).
    Exhaustive,
    /// Only these (term, tier) pairs.
    Tiers(Vec<(u64, u8)>),
}

/// The first read, which finds `θ`: each term's best tiers, a few thousand postings.
pub(super) fn first_read(terms: &[TermTiers]) -> Vec<(u64, u8)> {
    terms
        .iter()
        .flat_map(|t| {
            let all: u64 = t.tiers.iter().map(|tier| tier.2).sum();
            t.best_postings(FIRST_READ_POSTINGS.min(all / FIRST_READ_SHARE))
        })
        .collect()
}

/// The read that gives the exact top k, given `theta`, the k-th best score of the first read
/// (`None` when it found fewer than k documents).
pub(super) fn final_read(terms: &[TermTiers], theta: Option<f64>) -> Plan {
    let Some(theta) = theta.filter(|t| *t > 0.0) else {
        return Plan::Exhaustive;
    };
    let theta = theta * (1.0 - SLACK);
    let total: f64 = terms.iter().map(TermTiers::best).sum();
    let mut pairs = Vec::new();
    let mut skipped = false;
    for term in terms {
        let floor = theta - (total - term.best());
        if floor <= 0.0 {
            pairs.extend(term.down_to(f64::NEG_INFINITY));
        } else {
            let before = pairs.len();
            pairs.extend(term.down_to(floor));
            skipped |= pairs.len() - before < term.tiers.len();
        }
    }
    if skipped {
        Plan::Tiers(pairs)
    } else {
        Plan::Exhaustive
    }
}

/// Whether the final read is contained in the first, whose top k are then the answer.
pub(super) fn first_read_suffices(first: &[(u64, u8)], last: &[(u64, u8)]) -> bool {
    last.iter().all(|pair| first.contains(pair))
}

/// Whether a final read's top k are exact: k documents reaching `theta` (what the first read
/// showed; fewer means the index changed between the reads).
pub(super) fn final_read_holds(read: &[super::sql::Scored], k: usize, theta: Option<f64>) -> bool {
    match (read.get(k.saturating_sub(1)), theta) {
        (Some(kth), Some(theta)) => kth.score >= theta * (1.0 - SLACK),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BM25: Bm25 = Bm25 {
        k1: 1.2,
        b: 0.75,
        avgdl: 100.0,
    };

    /// BM25 of one posting, as the scoring statement computes it.
    fn contribution(idf: f64, tf: f64, length: f64) -> f64 {
        idf * tf * (BM25.k1 + 1.0) / (tf + BM25.k1 * (1.0 - BM25.b + BM25.b * length / BM25.avgdl))
    }

    /// The tier `sql/009_impact_tiers.sql` gives a posting.
    fn tier(tf: u16, length: u16) -> u8 {
        let tf_class = match tf {
            0..=3 => tf.max(1) - 1,
            4..=5 => 3,
            6..=8 => 4,
            9..=16 => 5,
            17..=32 => 6,
            _ => 7,
        };
        let length_class = [8, 16, 32, 64, 128, 256, 512, 1024, 2048]
            .iter()
            .take_while(|&&min| length >= min)
            .count() as u16;
        (tf_class * 16 + length_class) as u8
    }

    #[test]
    fn test_every_posting_is_within_its_tiers_bound() {
        for tf in 1..=200u16 {
            for length in [
                1u16, 5, 7, 8, 9, 15, 16, 31, 64, 99, 100, 500, 2047, 2048, 9000, 65535,
            ] {
                if length < tf {
                    continue;
                }
                let t = tier(tf, length);
                let actual = contribution(2.0, f64::from(tf), f64::from(length));
                assert!(BM25.bound(2.0, t) >= actual, "tf {tf} length {length}");
            }
        }
    }

    #[test]
    fn test_plans() {
        // Two terms: one rare (high idf), one common.
        let rare = TermTiers::new(1, 5.0, &[(tier(1, 50), 10), (tier(3, 20), 5)], &BM25);
        let common = TermTiers::new(
            2,
            0.5,
            &[
                (tier(1, 50), 90_000),
                (tier(1, 3000), 500),
                (tier(9, 40), 3000),
            ],
            &BM25,
        );
        let terms = [rare.clone(), common.clone()];
        let first = first_read(&terms);
        // Each term's best tiers until they hold a sixteenth of its postings, at most 2048:
        // the rare term's best tier, and the common one's (3000 postings).
        assert_eq!(first, [(1, tier(3, 20)), (2, tier(9, 40))]);
        // θ below what the common term alone can give: nothing can be skipped.
        assert_eq!(final_read(&terms, Some(0.1)), Plan::Exhaustive);
        assert_eq!(final_read(&terms, None), Plan::Exhaustive);
        // θ high: a top document needs the rare term; the common term's weak tiers are out.
        let Plan::Tiers(pairs) = final_read(&terms, Some(rare.best() + 0.5 * common.best())) else {
            panic!("expected tiers");
        };
        assert!(pairs.contains(&(1, tier(3, 20))));
        assert!(!pairs.contains(&(2, tier(1, 3000))));
        assert!(!first_read_suffices(&[], &pairs));
        assert!(first_read_suffices(&pairs, &pairs));
    }
}
