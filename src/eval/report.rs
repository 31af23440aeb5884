//! The evaluation's report: a Markdown table per split and the service's misses, and the same
//! as JSON with every question's outcome.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::metrics::{Outcome, Scores};
use super::questions::{Kind, Question, Split};

/// The systems compared, in the order of [`Asked::outcomes`].
pub(crate) const SYSTEMS: [&str; 3] = [
    "service",
    "reference BM25",
    "reference BM25, no function words",
];

/// Short keys of [`SYSTEMS`] in JSON.
const SYSTEM_KEYS: [&str; 3] = ["service", "reference", "reference_no_function_words"];

/// One question and what each system made of it.
pub(crate) struct Asked<'a> {
    pub question: &'a Question,
    pub outcomes: [Outcome; 3],
}

/// What was measured on: the corpus as ingested, and how long the run took.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Facts {
    pub log_files: usize,
    pub sessions: u64,
    pub turns: u64,
    pub events: u64,
    /// Events the default search covers (the reference's documents).
    pub searchable_events: usize,
    pub ingest_seconds: f64,
    /// Mean client-side latency of the service's searches, in milliseconds.
    pub search_mean_ms: f64,
    pub seconds: f64,
}

/// The splits a run reports: each alone, and together when it asked both.
pub(crate) fn splits(split: Split) -> Vec<Split> {
    match split {
        Split::All => vec![Split::All, Split::Dev, Split::Test],
        one => vec![one],
    }
}

/// The scores of `system` on the questions of `split` and, when given, of `kind`.
fn scores(asked: &[Asked<'_>], system: usize, split: Split, kind: Option<Kind>) -> Scores {
    Scores::of(
        asked
            .iter()
            .filter(|a| split.holds(a.question.split) && kind.is_none_or(|k| a.question.kind == k))
            .map(|a| &a.outcomes[system]),
    )
}

fn percent(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn rank(outcome: &Outcome) -> String {
    outcome.rank.map_or("—".into(), |r| r.to_string())
}

/// The report as Markdown: the corpus, a table per split, and the questions the service does
/// not rank first.
pub(crate) fn markdown(asked: &[Asked<'_>], split: Split, facts: &Facts) -> String {
    let mut out = format!(
        "\nRetrieval evaluation: {} questions on {} sessions ({} turns, {} events, {} searched by \
         default) from {} log files. Ingest {:.1} s, service searches {:.1} ms on average, {:.0} s in all.\n",
        asked.len(),
        facts.sessions,
        facts.turns,
        facts.events,
        facts.searchable_events,
        facts.log_files,
        facts.ingest_seconds,
        facts.search_mean_ms,
        facts.seconds,
    );
    for split in splits(split) {
        let n = scores(asked, 0, split, None).questions;
        out.push_str(&format!(
            "\n### Split {} ({n} questions)\n\n| system | kind | questions | MRR@10 | S@1 | S@5 | S@10 | turn hits |\n|---|---|---|---|---|---|---|---|\n",
            split.as_str()
        ));
        let kinds = std::iter::once(None).chain(Kind::ALL.into_iter().map(Some));
        for kind in kinds {
            for (system, name) in SYSTEMS.iter().enumerate() {
                let s = scores(asked, system, split, kind);
                out.push_str(&format!(
                    "| {name} | {} | {} | {:.3} | {} | {} | {} | {} |\n",
                    kind.map_or("all", Kind::as_str),
                    s.questions,
                    s.mrr_at_10,
                    percent(s.success_at_1),
                    percent(s.success_at_5),
                    percent(s.success_at_10),
                    s.turn_rate().map_or("—".into(), |r| format!(
                        "{} ({}/{})",
                        percent(r),
                        s.turn_hits,
                        s.turn_questions
                    )),
                ));
            }
        }
    }
    let misses: Vec<&Asked<'_>> = asked
        .iter()
        .filter(|a| a.outcomes[0].rank != Some(1))
        .collect();
    out.push_str(&format!(
        "\n### Questions the service does not rank first ({})\n\nRank of the first hit in a target session (— when not in the top 10), the service's and the references'.\n\n| id | kind | split | service | reference | no function words | question |\n|---|---|---|---|---|---|---|\n",
        misses.len()
    ));
    for a in misses {
        let q = a.question;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            q.id,
            q.kind.as_str(),
            q.split.as_str(),
            rank(&a.outcomes[0]),
            rank(&a.outcomes[1]),
            rank(&a.outcomes[2]),
            q.question.replace('|', "\\|"),
        ));
    }
    out
}

/// The report as JSON: the facts, every split's scores per system and kind, and each
/// question's outcomes with the service's hits (`<native session id>#<turn>`, in rank order,
/// parallel to `asked`).
pub(crate) fn json(
    asked: &[Asked<'_>],
    service_hits: &[Vec<String>],
    split: Split,
    facts: &Facts,
) -> Value {
    let mut by_split = Map::new();
    for split in splits(split) {
        let mut systems = Map::new();
        for (system, key) in SYSTEM_KEYS.iter().enumerate() {
            let mut kinds = Map::new();
            kinds.insert("all".into(), json!(scores(asked, system, split, None)));
            for kind in Kind::ALL {
                kinds.insert(
                    kind.as_str().into(),
                    json!(scores(asked, system, split, Some(kind))),
                );
            }
            systems.insert((*key).into(), Value::Object(kinds));
        }
        by_split.insert(split.as_str().into(), Value::Object(systems));
    }
    let questions: Vec<Value> = asked
        .iter()
        .enumerate()
        .map(|(at, a)| {
            let q = a.question;
            let mut entry = json!({
                "id": q.id, "kind": q.kind, "split": q.split, "question": q.question,
                "sessions": q.sessions, "turn": q.turn, "service_hits": service_hits.get(at),
            });
            for (key, outcome) in SYSTEM_KEYS.iter().zip(&a.outcomes) {
                entry[*key] = json!(outcome);
            }
            entry
        })
        .collect();
    let misses: Vec<Value> = asked
        .iter()
        .filter(|a| a.outcomes[0].rank != Some(1))
        .map(|a| json!({"id": a.question.id, "kind": a.question.kind, "rank": a.outcomes[0].rank}))
        .collect();
    json!({
        "facts": facts,
        "systems": SYSTEMS,
        "scores": by_split,
        "questions": questions,
        "service_misses": misses,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(id: &str, kind: Kind, split: Split) -> Question {
        Question {
            id: id.into(),
            kind,
            question: format!("question {id}?"),
            sessions: vec!["s".into()],
            turn: Some(1),
            split,
        }
    }

    fn outcome(rank: Option<usize>) -> Outcome {
        Outcome {
            rank,
            turn_hit: Some(rank == Some(1)),
        }
    }

    #[test]
    fn test_the_report_splits_kinds_and_lists_the_misses() {
        let qs = [
            question("a", Kind::Identifier, Split::Dev),
            question("b", Kind::Paraphrase, Split::Dev),
            question("c", Kind::Paraphrase, Split::Test),
        ];
        let asked: Vec<Asked<'_>> = qs
            .iter()
            .zip([Some(1), None, Some(3)])
            .map(|(q, r)| Asked {
                question: q,
                outcomes: [outcome(r), outcome(Some(1)), outcome(Some(2))],
            })
            .collect();
        let facts = Facts {
            log_files: 1,
            sessions: 1,
            turns: 1,
            events: 1,
            searchable_events: 1,
            ingest_seconds: 0.0,
            search_mean_ms: 0.0,
            seconds: 0.0,
        };
        let md = markdown(&asked, Split::All, &facts);
        assert!(md.contains("### Split dev (2 questions)"), "{md}");
        assert!(md.contains("### Split test (1 questions)"), "{md}");
        assert!(
            md.contains("| service | all | 3 | 0.444 | 33% | 67% | 67% | 33% (1/3) |"),
            "{md}"
        );
        assert!(
            md.contains("| service | paraphrase | 1 | 0.000 | 0% | 0% | 0% | 0% (0/1) |"),
            "{md}"
        );
        assert!(
            md.contains("| b | paraphrase | dev | — | 1 | 2 | question b? |"),
            "{md}"
        );
        assert!(!md.contains("| a | identifier"), "{md}");
        let value = json(&asked, &[vec!["s#1".into()]], Split::Dev, &facts);
        assert_eq!(value["scores"]["dev"]["service"]["all"]["questions"], 2);
        assert!(value["scores"].get("test").is_none());
        assert_eq!(value["service_misses"].as_array().unwrap().len(), 2);
        assert_eq!(value["questions"][2]["reference"]["rank"], 1);
        assert_eq!(value["questions"][0]["service_hits"][0], "s#1");
        assert_eq!(value["questions"][1]["service_hits"], Value::Null);
    }
}
