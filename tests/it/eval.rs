//! The retrieval evaluation's inputs (`moraine-mcp eval`): the corpus ingests cleanly, and every
//! question names a session the corpus holds and a turn that session has.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::common;
use serde::Deserialize;

fn eval_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/eval")
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Question {
    id: String,
    kind: String,
    question: String,
    sessions: Vec<String>,
    turn: Option<u32>,
    split: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Questions {
    question: Vec<Question>,
}

fn questions() -> Vec<Question> {
    let text = std::fs::read_to_string(eval_dir().join("questions.toml")).unwrap();
    toml::from_str::<Questions>(&text).unwrap().question
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[test]
fn the_question_set_has_every_kind_and_a_held_out_third() {
    let questions = questions();
    assert!(questions.len() >= 90, "{} questions", questions.len());
    let ids: HashSet<&str> = questions.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(ids.len(), questions.len(), "question ids repeat");
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for q in &questions {
        *kinds.entry(q.kind.as_str()).or_default() += 1;
        assert!(
            q.question.trim().ends_with('?'),
            "{}: {:?}",
            q.id,
            q.question
        );
        assert!(!q.sessions.is_empty(), "{} names no session", q.id);
        assert!(
            ["dev", "test"].contains(&q.split.as_str()),
            "{}: split {}",
            q.id,
            q.split
        );
    }
    let wanted = [
        ("identifier", 20),
        ("topical", 20),
        ("tool_output", 15),
        ("paraphrase", 20),
    ];
    for (kind, least) in wanted {
        assert!(kinds.get(kind).copied().unwrap_or(0) >= least, "{kinds:?}");
    }
    assert_eq!(kinds.len(), wanted.len(), "unknown kinds: {kinds:?}");
    let test = questions.iter().filter(|q| q.split == "test").count() as f64;
    let share = test / questions.len() as f64;
    assert!((0.25..=0.4).contains(&share), "test share {share}");
}

#[tokio::test]
async fn every_question_names_a_session_and_a_turn_the_ingested_corpus_holds() {
    let corpus = eval_dir().join("corpus");
    let mut all = Vec::new();
    files(&corpus, &mut all);
    let bytes: u64 = all.iter().map(|f| f.metadata().unwrap().len()).sum();
    assert!(bytes < 3 * 1024 * 1024, "the corpus is {bytes} bytes");
    let logs = all
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "jsonl"))
        .count();

    let (config, db) = common::fresh_db().await;
    let summary = common::ingest_paths(&config, &db, &corpus).await;
    let c = &summary.counters;
    assert!(c.unreadable.is_empty(), "{:?}", c.unreadable);
    assert_eq!(c.malformed, 0);
    assert_eq!(summary.files, logs, "every log is read");

    let d = || db.default_deadline();
    let sessions: Vec<(String, u64, u32, String)> = db
        .read(
            "t",
            "SELECT native_id, session_key, turn_count, cwd FROM sessions FINAL",
        )
        .fetch_all(&db, d())
        .await
        .unwrap();
    assert!(sessions.len() >= 40, "{} sessions", sessions.len());
    let projects: HashSet<&str> = sessions.iter().map(|s| s.3.as_str()).collect();
    assert!(projects.len() >= 6, "{projects:?}");
    let turns: u64 = sessions.iter().map(|s| u64::from(s.2)).sum();
    assert!(turns >= 250, "{turns} turns");
    let stored_turns: HashSet<(u64, u32)> = db
        .read("t", "SELECT session_key, ordinal FROM turns FINAL")
        .fetch_all::<(u64, u32)>(&db, d())
        .await
        .unwrap()
        .into_iter()
        .collect();
    let by_native: HashMap<&str, u64> = sessions.iter().map(|s| (s.0.as_str(), s.1)).collect();

    let mut broken = Vec::new();
    for q in questions() {
        for native in &q.sessions {
            if !by_native.contains_key(native.as_str()) {
                broken.push(format!("{}: no session {native} in the corpus", q.id));
            }
        }
        if let (Some(turn), Some(key)) = (q.turn, by_native.get(q.sessions[0].as_str()))
            && !stored_turns.contains(&(*key, turn))
        {
            broken.push(format!(
                "{}: session {} has no turn {turn}",
                q.id, q.sessions[0]
            ));
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}
